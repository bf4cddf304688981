"""Loopback S3 servers in their own processes, counting the GET requests they serve.

Two servers, chosen with ``run.py --s3``:

- ``moto`` (the default): moto's server, started from this file. It runs outside the
  benchmark process so that serving bytes does not compete with the reader for the GIL. A
  control path answers without touching moto: ``GET /__bench__/counts`` (JSON: GET requests,
  ranged GETs and bytes sent since the server started). Run directly:
  ``python bench/s3srv.py PORT_FILE``.
- ``seaweedfs``: ``weed mini`` (master, volume, filer and S3 gateway in one Go process, the
  launcher of the integration tests). The counts come from its Prometheus metrics
  (``SeaweedFS_s3_request_total`` by status, ``SeaweedFS_s3_bucket_traffic_sent_bytes_total``).

Either way ``read_counts(counts_url)`` returns cumulative counts; a figure is the difference
over one epoch.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["S3Proc", "read_counts", "start"]

SERVERS = ("moto", "seaweedfs")


def _serve(port_file: str) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()
    counts = {"get": 0, "get_ranged": 0, "bytes": 0, "other": 0}

    def recording(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/__bench__/"):
            with lock:
                body = json.dumps(counts).encode()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        method = environ["REQUEST_METHOD"]
        ranged = environ.get("HTTP_RANGE") is not None

        def sr(status: str, headers: list[tuple[str, str]], *a: Any) -> Any:
            sent = 0
            for k, v in headers:
                if k.lower() == "content-length":
                    sent = int(v)
            with lock:
                if method == "GET":
                    counts["get"] += 1
                    counts["get_ranged"] += int(ranged)
                    counts["bytes"] += sent
                else:
                    counts["other"] += 1
            return start_response(status, headers, *a)

        return app(environ, sr)

    httpd = make_server("127.0.0.1", 0, recording, True, request_handler=MotoRequestHandler)
    Path(port_file).write_text(str(httpd.server_address[1]))
    httpd.serve_forever()


def _prometheus(text: str) -> dict[str, int]:
    """GET counts of the ``bench`` bucket from SeaweedFS's metrics page.

    ``SeaweedFS_s3_request_total`` files HEAD requests under ``type="GET"``, so the GET count is
    the time-to-first-byte histogram's count instead (observed only when a body is streamed);
    ranged GETs are the 206 answers.
    """
    counts = {"get": 0, "get_ranged": 0, "bytes": 0}
    for line in text.splitlines():
        if 'bucket="bench"' not in line:
            continue
        value = int(float(line.rsplit(" ", 1)[1]))
        if line.startswith("SeaweedFS_s3_time_to_first_byte_millisecond_count{") \
                and 'type="GET"' in line:
            counts["get"] += value
        elif line.startswith("SeaweedFS_s3_request_total{") and 'type="GET"' in line \
                and 'code="206"' in line:
            counts["get_ranged"] += value
        elif line.startswith("SeaweedFS_s3_bucket_traffic_sent_bytes_total{"):
            counts["bytes"] += value
    return counts


def read_counts(counts_url: str) -> dict[str, int]:
    """Cumulative GETs, ranged GETs and bytes sent, from either server's counts URL."""
    with urllib.request.urlopen(counts_url, timeout=30) as r:
        body = r.read()
    if counts_url.endswith("/metrics"):
        return _prometheus(body.decode())
    return json.loads(body)


class S3Proc:
    """Handle on the server process: ``endpoint``, ``counts_url`` and ``stop()``."""

    def __init__(self, proc: Any, endpoint: str, counts_url: str, name: str = "moto") -> None:
        self.proc = proc
        self.endpoint = endpoint
        self.counts_url = counts_url
        self.name = name

    def counts(self) -> dict[str, int]:
        return read_counts(self.counts_url)

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="bench", aws_secret_access_key="bench")

    def upload_dir(self, local: Path, bucket: str, prefix: str, public: bool = False) -> int:
        """Upload every file under ``local`` to ``s3://bucket/prefix/...``; returns bytes."""
        from concurrent.futures import ThreadPoolExecutor

        s3 = self.client()
        with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
            s3.create_bucket(Bucket=bucket)
        files = [p for p in sorted(local.rglob("*")) if p.is_file()]
        extra = {"ACL": "public-read"} if public else None

        def put(p: Path) -> int:
            key = f"{prefix}/{p.relative_to(local).as_posix()}"
            s3.upload_file(str(p), bucket, key, ExtraArgs=extra)
            return p.stat().st_size

        with ThreadPoolExecutor(4) as pool:
            return sum(pool.map(put, files))

    def stop(self) -> None:
        if hasattr(self.proc, "stop"):  # tests/seaweed.Seaweed
            self.proc.stop()
            return
        self.proc.terminate()
        self.proc.wait(10)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_seaweed(workdir: Path) -> S3Proc:
    """``weed mini`` with the adapters' credentials and anonymous reads (for WebDataset)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import seaweed  # the integration tests' launcher

    run_dir = workdir / "seaweedfs"
    shutil.rmtree(run_dir, ignore_errors=True)
    metrics = _free_port()
    weed = seaweed.start_seaweed(
        run_dir, identities=[seaweed.identity("bench", "bench", "bench"),
                             {"name": "anonymous", "actions": ["Read"]}],
        extra_args=[f"-metricsPort={metrics}", "-metricsIp=127.0.0.1",
                    "-master.volumeSizeLimitMB=1024"])
    return S3Proc(weed, weed.endpoint, f"http://127.0.0.1:{metrics}/metrics", "seaweedfs")


def start(workdir: Path, server: str = "moto") -> S3Proc:
    """Start a server process (``moto`` or ``seaweedfs``) on ``http://127.0.0.1:<port>``."""
    if server == "seaweedfs":
        return _start_seaweed(workdir)
    port_file = workdir / "s3.port"
    port_file.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, __file__, str(port_file)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("the loopback S3 server did not start")
        time.sleep(0.1)
    endpoint = f"http://127.0.0.1:{port_file.read_text()}"
    return S3Proc(proc, endpoint, f"{endpoint}/__bench__/counts")


if __name__ == "__main__":
    _serve(sys.argv[1])
