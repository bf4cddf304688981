"""The cache directory deleted while a stream reads (``rm -rf`` of the cache mid-epoch).

A QA finding: the epoch died with a bare FileNotFoundError from the download that had just
written and verified its shard (its temp file vanished with the directory). The root still
holds every shard, so the reader recreates the cache directory and downloads again: every
sample arrives exactly once. Deleted under every download, the error names the directory.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from s3server import S3Server

from dload_arrow import ConflictError, Repository

N = 3000


def _commit(root: str, tmp_path: Path) -> None:
    writer = Repository.open(root, cache_dir=str(tmp_path / "writer"), cache_budget="unlimited")
    samples = [(f"k{i:05d}", {"x": i, "blob": os.urandom(800)}) for i in range(N)]
    writer.commit("d", samples, shard_size="256KiB", row_group_size=100,
                  progress=False)
    assert len(writer.dataset("d").manifest.shards) >= 8


def _xs_removing(items: Iterable[Any], cache: str, server: S3Server,
                 at: int = 700) -> Iterator[int]:
    """The samples' ``x``; at item ``at`` the shard downloads starting from then on wait,
    and a second later the cache directory is deleted under them, then they go on."""
    release = threading.Event()

    def remove() -> None:
        shutil.rmtree(cache, ignore_errors=True)
        release.set()

    for i, sample in enumerate(items):
        if i == at:
            server.held = ("/shards/", release)
            threading.Timer(1.0, remove).start()
        yield sample["x"]
    assert release.is_set()


@pytest.fixture
def s3_data(s3_root: str, tmp_path: Path, s3_server: S3Server) -> Iterator[str]:
    _commit(s3_root, tmp_path)
    yield s3_root
    s3_server.held = s3_server.slow = None


def test_a_stream_reads_on_when_its_cache_directory_is_deleted(
        s3_data: str, tmp_path: Path, s3_server: S3Server) -> None:
    cache = str(tmp_path / "cache")
    repo = Repository.open(s3_data, cache_dir=cache, cache_budget="2MB")
    xs = list(_xs_removing(repo.dataset("d").samples(), cache, s3_server))
    assert xs == list(range(N))  # every sample once, in order
    assert os.path.isdir(os.path.join(cache, "shards"))  # recreated
    again = Repository.open(s3_data, cache_dir=cache, cache_budget="2MB")
    assert sum(b.num_rows for b in again.dataset("d").batches()) == N


def test_a_shuffled_stream_reads_on_when_its_cache_directory_is_deleted(
        s3_data: str, tmp_path: Path, s3_server: S3Server) -> None:
    cache = str(tmp_path / "cache")
    repo = Repository.open(s3_data, cache_dir=cache, cache_budget="2MB")
    xs = list(_xs_removing(repo.dataset("d").shuffle("256KB", seed=3), cache, s3_server))
    assert sorted(xs) == list(range(N)) and xs != list(range(N))


def test_lookups_read_on_when_the_cache_directory_is_deleted(
        s3_data: str, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    repo = Repository.open(s3_data, cache_dir=cache, cache_budget="2MB")
    ds = repo.dataset("d")
    assert sum(b.num_rows for b in ds.batches()) == N  # shards and footers cached
    shutil.rmtree(cache)
    assert [ds.get(f"k{i:05d}")["x"] for i in (0, 1500, N - 1)] == [0, 1500, N - 1]
    assert ds.take([7, "k02999"]).column("x").to_pylist() == [7, N - 1]


def test_a_cache_deleted_under_every_download_is_named_in_the_error(
        s3_data: str, tmp_path: Path, s3_server: S3Server) -> None:
    cache = str(tmp_path / "cache")
    repo = Repository.open(s3_data, cache_dir=cache, cache_budget="2MB")
    s3_server.throttle("/shards/", 0.3)  # each download takes a while: room to delete under it
    stop = threading.Event()

    def remove() -> None:
        while not stop.wait(0.05):
            shutil.rmtree(os.path.join(cache, "shards"), ignore_errors=True)

    remover = threading.Thread(target=remove)
    remover.start()
    try:
        with pytest.raises(ConflictError) as err:
            for _ in repo.dataset("d").samples(prefetch=0):
                pass
    finally:
        stop.set()
        remover.join()
    text = str(err.value)
    assert cache in text and "was removed while reading" in text
    assert "dload cache clear" in text


def test_a_cache_deleted_once_while_downloads_run_loses_nothing(
        s3_data: str, tmp_path: Path) -> None:
    """A plain ``rm -rf`` of the cache at some sample, downloads ahead running (a QA finding:
    the retry kept the download lock of the deleted directory, another thread's scan took
    the new temp file for a stale one and deleted it, every retry: "removed 4 times")."""
    for run in range(3):
        cache = str(tmp_path / f"cache{run}")
        repo = Repository.open(s3_data, cache_dir=cache, cache_budget="unlimited")
        xs = []
        for i, sample in enumerate(repo.dataset("d").samples()):
            if i == 10:
                shutil.rmtree(cache, ignore_errors=True)
            xs.append(sample["x"])
        assert xs == list(range(N))


def test_a_folder_deleted_while_it_is_made_is_made_again(
        s3_data: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """QA env53: ``os.makedirs(exist_ok=True)`` raises FileExistsError when the folder its
    mkdir found is gone when it looks again (an ``rm -rf`` of the cache racing the reader):
    a bare FileExistsError ended the epoch. The race, made certain: the first making of a
    per-shard folder of each kind (locks/, holds/, shards/) finds it and loses it at once.
    The reader makes it again and reads on."""
    cache = str(tmp_path / "cache")
    real, raced = os.makedirs, {}

    def racing(path: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
        real(path, mode, exist_ok)
        parts = os.path.relpath(os.fspath(path), cache).split(os.sep)
        if len(parts) == 2 and parts[0] != ".." and parts[0] not in raced:
            raced[parts[0]] = os.fspath(path)
            shutil.rmtree(path, ignore_errors=True)
            raise FileExistsError(errno.EEXIST, "File exists", os.fspath(path))

    monkeypatch.setattr(os, "makedirs", racing)
    repo = Repository.open(s3_data, cache_dir=cache, cache_budget="unlimited")
    assert [s["x"] for s in repo.dataset("d").samples()] == list(range(N))
    assert set(raced) == {"locks", "holds", "shards"}, raced
