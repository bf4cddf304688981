"""A cached shard copy that went bad after its download is fetched anew in the middle of a read.

The root's copy was verified by sha256 when it was downloaded, so a copy that no longer
decodes went bad on this machine's disk: the reader removes it, downloads the shard again
(verified), and reads on from the unit it was at. Only once per visit: a copy that is bad again
is an error. A local root's file is read in place and has no other copy: its error stays.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from dload_arrow import IntegrityError, Repository


def _spoil_keeping_mtime(path: str, at: int, width: int = 64) -> None:
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(at if at >= 0 else st.st_size + at)
        data = f.read(width)
        f.seek(-len(data), 1)
        f.write(bytes(b ^ 0xFF for b in data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and stamp look trusted


@pytest.fixture
def repo(memory_root: str, cache_dir: str) -> Repository:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    rows = [(f"k{i:05d}", {"x": i, "blob": os.urandom(200)}) for i in range(1200)]
    repo.commit("d", rows, shard_size=60_000, row_group_size=8_000, progress=False)
    return repo


def _units_of_first_shard(repo: Repository) -> int:
    return len(repo.manifest("d").shards[0].rg_rows)


@pytest.mark.parametrize("where", ["a row group's pages", "the footer"])
def test_a_bad_cached_copy_is_fetched_anew_and_the_epoch_reads_through(
        repo: Repository, where: str) -> None:
    ds = repo.dataset("d")
    want = [s["x"] for s in ds.samples()]  # every shard is now in the cache
    assert want == list(range(1200)) and _units_of_first_shard(repo) >= 3
    cache = repo.read_context.cache()
    shard = repo.manifest("d").shards[0]
    at = shard.rg_offsets[2] + 40 if where == "a row group's pages" else -6  # mid-stream
    _spoil_keeping_mtime(cache.shard_file(shard.digest), at, 64 if at > 0 else 4)
    assert [s["x"] for s in repo.dataset("d").samples()] == want
    assert cache.is_cached(shard.digest, shard.bytes)  # a good copy again
    assert [s["x"] for s in repo.dataset("d").samples()] == want


def test_a_shuffled_read_reads_through_a_bad_copy_too(repo: Repository) -> None:
    ds = repo.dataset("d")
    want = sorted(s["x"] for s in ds.shuffle(300, seed=1))
    shard = repo.manifest("d").shards[0]
    cache = repo.read_context.cache()
    _spoil_keeping_mtime(cache.shard_file(shard.digest), shard.rg_offsets[1] + 40)
    assert sorted(s["x"] for s in repo.dataset("d").shuffle(300, seed=1)) == want == list(
        range(1200))


def test_a_local_roots_bad_file_is_still_an_error(local_root: str) -> None:
    repo = Repository.open(local_root)
    repo.commit("d", [(f"k{i:05d}", {"blob": os.urandom(200)}) for i in range(400)],
                row_group_size=8_000, progress=False)
    shard = repo.manifest("d").shards[0]
    path = os.path.join(local_root, "shards", shard.digest[:2], shard.digest + ".parquet")
    assert os.path.exists(path)
    _spoil_keeping_mtime(path, shard.rg_offsets[1] + 40)
    got = []
    before = set(threading.enumerate())  # other tests' threads are not this reader's
    with pytest.raises(IntegrityError, match="verify"):
        got.extend(s["blob"] for s in repo.dataset("d").samples())
    assert len(got) == shard.rg_rows[0]  # every row before the bad row group, in order
    deadline = time.monotonic() + 5
    while any(t.name.startswith("dload-") for t in set(threading.enumerate()) - before):
        assert time.monotonic() < deadline, "the reader's threads outlived its error"
        time.sleep(0.01)


def test_a_copy_removed_by_another_reader_mid_visit_is_read_through_our_mapping(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another reader of this cache found the copy bad and unlinked it while this stream was
    inside the shard: the decoding threads cannot open the path any more, but the stream's
    own mapping of the file still reads it (the error is not raised raw)."""
    from dload_arrow.read import decoders

    ds = repo.dataset("d")
    want = [s["x"] for s in ds.samples()]
    real = decoders.Decoders._run
    removed: list[str] = []

    def run(self: Any, i: int, path: str, metadata: Any, rg: int, verify: bool) -> Any:
        if not removed:
            removed.append(path)
            os.unlink(path)  # as corrupt_shard in another process does
        return real(self, i, path, metadata, rg, verify)

    monkeypatch.setattr(decoders.Decoders, "_run", run)
    assert [s["x"] for s in repo.dataset("d").samples()] == want and removed
