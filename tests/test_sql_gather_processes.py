"""Two processes sharing one cache each run a query over a dataset that fits the budget alone
but not beside the other's: each used to hold half its shards and wait for room the other
held, and both failed after the 600 s wait. One query of the machine gathers at a time now."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dload_arrow import Repository


def _query(root: str, cache: str, name: str, out: Any) -> None:
    try:
        repo = Repository.open(root, cache_dir=cache, cache_budget="6MB")
        sources = " JOIN ".join(f"samples('{n}')" for n in name.split("+"))
        got = repo.sql(f"SELECT count(*) AS n FROM {sources} USING (i)" if "+" in name
                       else f"SELECT count(*) AS n FROM {sources}")
        out.put((name, got.column("n")[0].as_py()))
    except Exception as e:  # reported, not lost in the child
        out.put((name, f"{type(e).__name__}: {e}"))


def _rows(seed: int, n: int = 1000) -> Any:
    rng = np.random.default_rng(seed)
    return ((f"k{i:06d}", {"i": i, "blob": rng.bytes(4096)}) for i in range(n))


def _run(root: str, cache: str, queries: tuple[str, ...]) -> dict[str, Any]:
    spawn = mp.get_context("spawn")
    out = spawn.Queue()
    procs = [spawn.Process(target=_query, args=(root, cache, q, out)) for q in queries]
    for p in procs:
        p.start()
    got = {}
    try:
        for _ in procs:
            name, n = out.get(timeout=120)
            got[name] = n
    except queue.Empty:
        pass
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(10)
    return got


@pytest.mark.timeout(240)
def test_two_processes_querying_datasets_that_fit_only_one_at_a_time_both_finish(
        s3_root: str, tmp_path: Any) -> None:
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "w"))
    for name, seed in (("d", 0), ("e", 1)):  # 5.2 MB each, in 256 KB shards
        writer.commit(name, _rows(seed), shard_size="256KiB", row_group_size="64KiB",
                      progress=False)
    cache = str(tmp_path / "cache")
    got = _run(s3_root, cache, ("d", "e"))
    assert got == {"d": 1000, "e": 1000}
    assert not [f for _, _, fs in os.walk(cache) for f in fs if ".tmp-" in f]


@pytest.mark.timeout(240)
def test_two_processes_each_joining_two_sources_gather_all_or_nothing(
        s3_root: str, tmp_path: Any) -> None:
    # Each join fits the 6 MB budget (2 x 2.6 MB); the two joins together do not. Gathered a
    # source at a time, each held one source and waited for room the other held.
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "w"))
    for seed, name in enumerate("defg"):
        writer.commit(name, _rows(seed, 500), shard_size="256KiB", row_group_size="64KiB",
                      progress=False)
    cache = str(tmp_path / "cache")
    for _ in range(3):  # (before: one run in three or so met halfway)
        got = _run(s3_root, cache, ("d+e", "f+g"))
        assert got == {"d+e": 500, "f+g": 500}
    assert not [f for _, _, fs in os.walk(cache) for f in fs if ".tmp-" in f]


def _commit_small(root: str, tmp_path: Any) -> Repository:
    repo = Repository.open(root, cache_dir=str(tmp_path / "c"), cache_budget="50MB")
    for name, seed in (("d", 0), ("e", 1)):
        rng = np.random.default_rng(seed)
        repo.commit(name, ((f"k{i}", {"b": rng.bytes(1000)}) for i in range(200)),
                    shard_size="64KiB", progress=False)
    return repo


def test_a_query_of_cached_shards_does_not_wait_for_another_gather(
        memory_root: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.read.locks import FileLock, LockTimeout

    monkeypatch.setenv("DLOAD_CACHE_WAIT", "1")  # (read when the process opens the cache)
    repo = _commit_small(memory_root, tmp_path)
    count = "SELECT count(*) AS n FROM samples('d')"
    assert repo.sql(count).column("n")[0].as_py() == 200  # d is cached now
    again = Repository.open(memory_root, cache_dir=str(tmp_path / "c"), cache_budget="50MB")
    # another process gathers (a stalled one: its lock file names no download in progress)
    other = FileLock.acquire(str(tmp_path / "c" / "gather.lock"), exclusive=True)
    try:
        assert again.sql(count).column("n")[0].as_py() == 200  # cached: no wait
        with pytest.raises(LockTimeout, match="without the download that holds it making"):
            again.sql("SELECT count(*) AS n FROM samples('e')")  # e must be gathered
    finally:
        other.release()
    assert again.sql("SELECT count(*) AS n FROM samples('e')").column("n")[0].as_py() == 200


def test_a_gather_waits_as_long_as_the_other_gathers_downloads_progress(
        memory_root: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from dload_arrow.read.locks import FileLock

    monkeypatch.setenv("DLOAD_CACHE_WAIT", "0.5")
    repo = _commit_small(memory_root, tmp_path)
    digest = repo.manifest("d").shards[0].digest
    cache = repo.read_context.cache()
    again = Repository.open(memory_root, cache_dir=str(tmp_path / "c"), cache_budget="50MB")
    lock_path = str(tmp_path / "c" / "gather.lock")
    other = FileLock.acquire(lock_path, exclusive=True)
    Path(lock_path).write_text(digest)  # the other gather downloads this shard
    partial = Path(cache.shard_file(digest) + ".tmp-1-x")
    partial.parent.mkdir(parents=True, exist_ok=True)

    def download() -> None:  # 2.5 s of steady progress, well past the 0.5 s wait
        for _ in range(25):
            with partial.open("ab") as f:
                f.write(b"x")
            time.sleep(0.1)
        partial.unlink()
        other.release()

    t = threading.Thread(target=download)
    t.start()
    t0 = time.monotonic()
    try:
        got = again.sql("SELECT count(*) AS n FROM samples('e')")
    finally:
        t.join()
    assert got.column("n")[0].as_py() == 200
    assert time.monotonic() - t0 >= 2.0  # it waited for the gather, past its 0.5 s
