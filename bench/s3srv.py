"""A loopback S3 server (moto) in its own process, counting the requests it serves.

The server runs outside the benchmark process so that serving bytes does not compete with the
reader for the GIL. Two control paths answer without touching moto:
``GET /__bench__/counts`` (JSON: GET requests and bytes sent since the last clear) and
``POST /__bench__/clear``. Run directly: ``python bench/s3srv.py PORT_FILE``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["S3Proc", "start"]


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
            if path.endswith("/clear"):
                with lock:
                    for k in counts:
                        counts[k] = 0
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


class S3Proc:
    """Handle on the server process."""

    def __init__(self, proc: subprocess.Popen[bytes], endpoint: str) -> None:
        self.proc = proc
        self.endpoint = endpoint

    def _call(self, what: str, method: str = "GET") -> dict[str, int]:
        req = urllib.request.Request(f"{self.endpoint}/__bench__/{what}", method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def counts(self) -> dict[str, int]:
        return self._call("counts")

    def clear(self) -> None:
        self._call("clear", "POST")

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
        self.proc.terminate()
        self.proc.wait(10)


def start(workdir: Path) -> S3Proc:
    """Start the server process; its endpoint is ``http://127.0.0.1:<port>``."""
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
    return S3Proc(proc, f"http://127.0.0.1:{port_file.read_text()}")


if __name__ == "__main__":
    _serve(sys.argv[1])
