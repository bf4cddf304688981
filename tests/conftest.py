"""Shared fixtures: local, memory and S3 (moto's server over HTTP) roots, small caches."""

from __future__ import annotations

import itertools
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from s3server import S3Server, start_s3_server
from seaweed import ACCESS_KEY, SECRET_KEY, Seaweed, start_seaweed
from worker_faults import install as _stacks_on_worker_faults

from dload_arrow import Repository

_stacks_on_worker_faults()

_counter = itertools.count()


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's config, lock file, root or cache."""
    for var in ("DLOAD_ROOT", "DLOAD_CACHE_DIR", "DLOAD_CACHE_BUDGET", "DLOAD_ENDPOINT_URL",
                "DLOAD_MEMORY_LIMIT", "R2_ACCOUNT_ID"):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # dload.toml / dload.lock lookups stop at tmp_path: stray files in /tmp cannot leak in.
    monkeypatch.setenv("DLOAD_CEILING_DIRECTORIES", str(tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 (one per test session)."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    server = start_s3_server()
    yield server
    server.stop()


@pytest.fixture
def s3_root(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the moto server; DLOAD_ENDPOINT_URL points at it (for subprocesses)."""
    import s3fs

    monkeypatch.setenv("DLOAD_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    bucket = f"test-{next(_counter)}-{uuid.uuid4().hex[:8]}"
    fs = s3fs.S3FileSystem(
        client_kwargs={"endpoint_url": s3_server.endpoint}, skip_instance_cache=True
    )
    fs.mkdir(bucket)
    s3_server.clear()
    return f"s3://{bucket}/root"


@pytest.fixture(scope="session")
def seaweed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    """SeaweedFS (`weed mini`) on free loopback ports, one per session, with one bucket."""
    import s3fs

    server = start_seaweed(tmp_path_factory.mktemp("seaweed"))
    try:
        fs = s3fs.S3FileSystem(
            key=ACCESS_KEY, secret=SECRET_KEY, skip_instance_cache=True,
            client_kwargs={"endpoint_url": server.endpoint},
        )
        fs.mkdir("dload")
        yield server
    finally:
        server.stop()


@pytest.fixture
def seaweed_root(seaweed_server: Seaweed, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh prefix in SeaweedFS's bucket; endpoint and credentials exported via env."""
    monkeypatch.setenv("DLOAD_ENDPOINT_URL", seaweed_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return f"s3://dload/t-{next(_counter)}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def local_root(tmp_path: Path) -> str:
    return str(tmp_path / "root")


@pytest.fixture
def memory_root() -> str:
    return f"memory://dload-{uuid.uuid4().hex}"


@pytest.fixture(params=["local", "memory", "s3"])
def any_root(request: pytest.FixtureRequest) -> str:
    """Each backend in turn: local directory, memory://, S3 on moto's server."""
    name = {"local": "local_root", "memory": "memory_root", "s3": "s3_root"}[request.param]
    return str(request.getfixturevalue(name))


@pytest.fixture
def cache_dir(tmp_path: Path) -> str:
    return str(tmp_path / "cache")


@pytest.fixture
def repo(local_root: str, cache_dir: str) -> Repository:
    """A repository on a fresh local root with its own cache."""
    return Repository.open(local_root, cache_dir=cache_dir, cache_budget="unlimited")


@pytest.fixture
def any_repo(any_root: str, cache_dir: str) -> Repository:
    """A repository on each backend in turn."""
    return Repository.open(any_root, cache_dir=cache_dir, cache_budget="unlimited")


@pytest.fixture
def s3_repo(s3_root: str, cache_dir: str) -> Repository:
    return Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
