"""The machine-wide cache: budget, sharing between processes, crashes, corruption."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from dload_arrow import ConfigError, InfeasiblePlanError, IntegrityError, Repository
from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.cache import Cache, resolve_budget
from dload_arrow.read.cache_space import VERIFIED_NS
from dload_arrow.read.locks import FileLock
from dload_arrow.store.names import shard_path


def _commit(repo: Repository, name: str = "d", n: int = 600) -> None:
    samples = [(f"k{i:05d}", {"x": i, "blob": bytes([i % 251]) * 40 + os.urandom(24)})
               for i in range(n)]
    repo.commit(name, samples, shard_size=3000, row_group_size=800, progress=False)


def _disk_bytes(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(dirpath, f)).st_size
    return total


def _shard_bytes(path: str) -> int:
    """Bytes of shards on disk, each digest once.

    A verified download is renamed from its temp name outside the admission lock, and a
    directory listing taken during the rename may show both names (readdir is not a
    snapshot): counting each digest once keeps that rename from being counted twice.
    """
    sizes: dict[str, int] = {}
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                size = os.stat(os.path.join(dirpath, f)).st_size
                digest = f.split(".", 1)[0]
                sizes[digest] = max(sizes.get(digest, 0), size)
    return sum(sizes.values())


def test_dataset_ten_times_the_budget_streams_each_sample_once_within_budget(
    memory_root: str, cache_dir: str
) -> None:
    writer = Repository.open(memory_root, cache_dir=cache_dir + "-w", cache_budget="unlimited")
    _commit(writer, n=1500)
    m = writer.manifest("d")
    budget = m.num_bytes // 10
    assert budget >= 2 * max(s.bytes for s in m.shards)  # room for a window of 2 shards
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget=str(budget))
    shards_dir = os.path.join(cache_dir, "shards")
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        # Measure under the cache's admission lock: a walk over many subdirectories is not a
        # snapshot (it could count a shard evicted from one folder and its replacement in
        # another). Under the lock nothing is evicted or reserved; downloads only grow within
        # their reservations and renames stay within one folder.
        while not stop.is_set():
            with FileLock.acquire(os.path.join(cache_dir, "cache.lock"), exclusive=True):
                seen.append(_shard_bytes(shards_dir))

    t = threading.Thread(target=sample)
    t.start()
    try:
        keys = [k for b in repo.dataset("d").batches() for k in b.column("__key__").to_pylist()]
    finally:
        stop.set()
        t.join()
    assert sorted(keys) == [f"k{i:05d}" for i in range(1500)]
    assert len(seen) > 10
    assert max(seen) <= budget
    assert max(seen) > 0
    assert _disk_bytes(shards_dir) <= budget


@pytest.mark.parametrize("mode", ["batches", "samples"])
def test_a_dataset_ten_times_the_budget_is_fetched_once_per_shard(s3_root: str, cache_dir: str,
                                                                 s3_server, tmp_path: Path,
                                                                 mode: str) -> None:
    # The "one GET per shard per epoch" target on the workload ten times the budget: shards
    # fetched ahead are stamped when fetched, before the shard the reader has just finished,
    # so least-recently-used order alone evicted the look-ahead to make room for more of it,
    # and every shard was downloaded twice.
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "w"), cache_budget="unlimited")
    _commit(writer, n=1500)
    m = writer.manifest("d")
    digests = [s.digest for s in m.shards]
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget=str(m.num_bytes // 10))
    ds = repo.dataset("d")
    s3_server.clear()
    n = (sum(b.num_rows for b in ds.batches()) if mode == "batches"
         else sum(1 for _ in ds.samples()))
    assert n == 1500
    assert [s3_server.count("GET", contains=d) for d in digests] == [1] * len(digests)


def test_budget_strings() -> None:
    assert resolve_budget("unlimited", ".") == UNLIMITED
    assert resolve_budget("60GB", ".") == 60 * 10**9
    assert resolve_budget("auto", ".") > 0
    with pytest.raises(ConfigError, match="auto"):
        resolve_budget("lots", ".")


_READER = textwrap.dedent("""
    import sys
    from dload_arrow import Repository
    repo = Repository.open(sys.argv[1], cache_dir=sys.argv[2], cache_budget="unlimited")
    print(sum(b.num_rows for b in repo.dataset("d").batches(prefetch=3)))
""")


def test_two_processes_on_a_cold_cache_fetch_each_shard_once(s3_root: str, cache_dir: str,
                                                             s3_server, tmp_path: Path) -> None:
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "w"), cache_budget="unlimited")
    _commit(writer, n=900)
    digests = [s.digest for s in writer.manifest("d").shards]
    s3_server.clear()
    procs = [subprocess.Popen([sys.executable, "-c", _READER, s3_root, cache_dir],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert [int(o.strip()) for o in outs] == [900, 900]
    assert [s3_server.count("GET", contains=d) for d in digests] == [1] * len(digests)


_HOLDER = textwrap.dedent("""
    import sys, time
    from dload_arrow import Repository
    repo = Repository.open(sys.argv[1], cache_dir=sys.argv[2], cache_budget="unlimited")
    m = repo.manifest("d")
    cache = repo.read_context.cache()
    holds = [cache.acquire(repo.storage, s.digest, s.bytes) for s in m.shards]
    print("held", flush=True)
    time.sleep(120)
""")


def test_holds_of_a_killed_process_do_not_block_eviction(s3_root: str, cache_dir: str) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    total = repo.manifest("d").num_bytes
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, s3_root, cache_dir],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        cache = Cache(cache_dir, "unlimited")
        assert all(e.held for e in cache.entries())
        assert repo.cache_clear() < total  # live holds are never evicted (manifests go)
        assert _disk_bytes(os.path.join(cache_dir, "shards")) == total
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert not any(e.held for e in cache.entries())
    assert repo.cache_clear() == total
    assert _disk_bytes(os.path.join(cache_dir, "shards")) == 0


def test_eviction_needs_a_released_hold_and_times_out_clearly(memory_root: str,
                                                               cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir)
    _commit(repo)
    a, b = repo.manifest("d").shards[:2]
    cache = Cache(cache_dir, max(a.bytes, b.bytes), wait_timeout=0.3)
    hold = cache.acquire(repo.storage, a.digest, a.bytes)
    with pytest.raises(InfeasiblePlanError, match="held by live readers"), pytest.warns(
            UserWarning, match="waiting for room"):  # said while it waits, not only at the end
        cache.acquire(repo.storage, b.digest, b.bytes)
    hold.release()
    with cache.acquire(repo.storage, b.digest, b.bytes) as hb:
        assert os.path.exists(hb.path)
    assert not cache.is_cached(a.digest, a.bytes)  # evicted to make room


def test_the_wait_for_room_is_set_by_dload_cache_wait(
        memory_root: str, cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir)
    _commit(repo)
    a, b = repo.manifest("d").shards[:2]
    monkeypatch.setenv("DLOAD_CACHE_WAIT", "0.3")
    cache = Cache(cache_dir, max(a.bytes, b.bytes))
    assert cache.wait_timeout == 0.3
    hold = cache.acquire(repo.storage, a.digest, a.bytes)
    with pytest.raises(InfeasiblePlanError, match="DLOAD_CACHE_WAIT=seconds"), pytest.warns(
            UserWarning, match="waiting for room"):
        cache.acquire(repo.storage, b.digest, b.bytes)
    hold.release()
    for bad in ("soon", "0", "-5", "inf", "nan"):
        monkeypatch.setenv("DLOAD_CACHE_WAIT", bad)
        with pytest.raises(ConfigError, match=f"DLOAD_CACHE_WAIT='{bad}' is not a number"):
            Cache(cache_dir, "1GB")
    monkeypatch.delenv("DLOAD_CACHE_WAIT")
    assert Cache(cache_dir, "1GB").wait_timeout == 600


def test_lru_evicts_the_least_recently_used_shard(memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir)
    _commit(repo)
    a, b, c = repo.manifest("d").shards[:3]
    cache = Cache(cache_dir, a.bytes + b.bytes + max(a.bytes, b.bytes, c.bytes) // 2)
    cache.acquire(repo.storage, a.digest, a.bytes).release()
    cache.acquire(repo.storage, b.digest, b.bytes).release()
    os.utime(cache._hold_file(a.digest), (1e9, 1e9))  # a: used long ago
    cache.acquire(repo.storage, c.digest, c.bytes).release()
    assert not cache.is_cached(a.digest, a.bytes)
    assert cache.is_cached(b.digest, b.bytes) and cache.is_cached(c.digest, c.bytes)


def test_a_smaller_budget_trims_the_cache_when_opened(memory_root: str,
                                                     cache_dir: str) -> None:
    big = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(big)
    big.pull("d", progress=False)
    shards = big.manifest("d").shards
    full = Cache(cache_dir, "unlimited").used_bytes()
    assert full == sum(s.bytes for s in shards)
    budget = full // 3
    held = Cache(cache_dir, "unlimited").try_hold(shards[0].digest, shards[0].bytes)
    assert held is not None
    os.utime(Cache(cache_dir, "unlimited")._hold_file(shards[0].digest), (1e9, 1e9))  # oldest
    try:
        small = Cache.shared(cache_dir, budget)  # how a reader with a smaller budget opens it
        assert small.used_bytes() <= budget
        assert small.is_cached(shards[0].digest, shards[0].bytes)  # held: never evicted
    finally:
        held.release()
    assert small.trim() == 0  # within budget already


def test_threads_wanting_one_shard_download_it_once(s3_root: str, cache_dir: str,
                                                    s3_server) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    entry = repo.manifest("d").shards[0]
    s3_server.clear()
    cache = Cache(cache_dir, "unlimited")
    holds = []

    def get() -> None:
        holds.append(cache.acquire(repo.storage, entry.digest, entry.bytes))

    threads = [threading.Thread(target=get) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(holds) == 6
    assert s3_server.count("GET", contains=entry.digest) == 1


def test_a_flipped_byte_in_a_cached_shard_is_fetched_again(s3_root: str, cache_dir: str,
                                                            s3_server) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    entry = repo.manifest("d").shards[0]
    s3_server.clear()
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600
    assert s3_server.count("GET", contains=entry.digest) == 1
    path = repo.read_context.cache().shard_file(entry.digest)
    with open(path, "r+b") as f:
        f.seek(entry.bytes // 2)
        byte = f.read(1)
        f.seek(entry.bytes // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    keys = [k for b in repo.dataset("d").batches() for k in b.column("__key__").to_pylist()]
    assert keys == [f"k{i:05d}" for i in range(600)]
    assert s3_server.count("GET", contains=entry.digest) == 2
    assert Cache(cache_dir, "unlimited").is_cached(entry.digest, entry.bytes)


def test_a_truncated_cached_shard_is_fetched_again(memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    entry = repo.manifest("d").shards[1]
    repo.pull("d", progress=False)
    path = repo.read_context.cache().shard_file(entry.digest)
    os.truncate(path, entry.bytes - 10)
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600
    assert os.path.getsize(path) == entry.bytes


def test_a_cached_shard_touched_since_verified_is_hashed_again(memory_root: str,
                                                               cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    entry = repo.manifest("d").shards[1]
    repo.pull("d", progress=False)
    cache = repo.read_context.cache()
    path = cache.shard_file(entry.digest)
    good = Path(path).read_bytes()
    os.utime(path)  # same bytes, mtime moved: hashed again, kept
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600
    assert Path(path).read_bytes() == good and os.stat(path).st_mtime_ns == VERIFIED_NS
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0x01
    Path(path).write_bytes(bytes(flipped))  # same size, other bytes: fetched again
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600
    assert Path(path).read_bytes() == good and os.stat(path).st_mtime_ns == VERIFIED_NS


def test_a_corrupt_shard_in_the_root_raises_integrity_error(memory_root: str,
                                                             cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    entry = repo.manifest("d").shards[2]
    data = bytearray(repo.storage.read(shard_path(entry.digest)))
    data[len(data) // 2] ^= 0x01
    repo.storage.write(shard_path(entry.digest), bytes(data))
    with pytest.raises(IntegrityError) as err:
        for _ in repo.dataset("d").batches():
            pass
    assert entry.digest in str(err.value) and "d@" in str(err.value)
    assert "--delete-bad" in str(err.value)  # recommitting alone would skip the bad object
    assert not Cache(cache_dir, "unlimited").is_cached(entry.digest, entry.bytes)
    # Prefetches of other shards may still be finishing in the background; the corrupt
    # shard's own download must have left nothing behind.
    leftovers = [f for _, _, fs in os.walk(os.path.join(cache_dir, "shards")) for f in fs
                 if ".tmp-" in f and f.startswith(entry.digest)]
    assert leftovers == []


def test_a_dead_downloaders_reservation_is_reclaimed(memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir)
    _commit(repo)
    entry = repo.manifest("d").shards[0]
    cache = Cache(cache_dir, entry.bytes)
    stale = cache.shard_file("ab" * 32) + f".tmp-{entry.bytes}-deadbeef"
    os.makedirs(os.path.dirname(stale), exist_ok=True)
    Path(stale).write_bytes(b"partial")
    assert cache.used_bytes() == entry.bytes  # counted as reserved while it is there
    with cache.acquire(repo.storage, entry.digest, entry.bytes):
        pass
    assert not os.path.exists(stale)


def test_a_shard_bigger_than_the_s3_block_size_is_fetched_with_one_get(
        s3_root: str, cache_dir: str, s3_server: Any) -> None:
    # s3fs splits objects above its block size into several ranged GETs; the cache asks for
    # one streaming GET per shard (the "one GET per shard per epoch per machine" target).
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited",
                           storage_options={"default_block_size": 1024})
    _commit(repo)
    shards = repo.manifest("d").shards
    assert min(e.bytes for e in shards) > 2 * 1024
    s3_server.clear()
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600
    assert [s3_server.count("GET", contains=e.digest) for e in shards] == [1] * len(shards)


def _spoil_keeping_mtime(path: str, at: int) -> None:
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(at if at >= 0 else st.st_size + at)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and stamp look trusted


def test_a_cached_copy_that_went_bad_is_removed_and_fetched_anew(memory_root: str,
                                                                 cache_dir: str) -> None:

    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    ds = repo.dataset("d")
    want = [s["x"] for s in ds.samples()]  # every shard is now in the cache
    cache = repo.read_context.cache()
    first = repo.manifest("d").shards[0]
    # a byte of row group 0's pages: its CRC fails, so the row is read from the root instead
    _spoil_keeping_mtime(cache.shard_file(first.digest), first.rg_offsets[0] + 200)
    assert ds[0]["x"] == want[0]
    assert not cache.is_cached(first.digest, first.bytes)  # and the bad copy is gone
    [s["x"] for s in ds.samples()]  # fetched again
    _spoil_keeping_mtime(cache.shard_file(first.digest), -1)  # the footer's magic
    # a stream removes the bad copy and fetches it anew (tests/test_cache_refetch.py)
    assert [s["x"] for s in repo.dataset("d").samples()] == want
    assert cache.is_cached(first.digest, first.bytes)


def test_an_intact_shard_that_this_pyarrow_cannot_decode_is_not_called_corrupt(
        local_root: str, cache_dir: str) -> None:
    # A shard written by a newer pyarrow (a list of fixed-size lists with nulls: pyarrow 25
    # wrote files 24 could not read) must not be deleted as corrupt: its bytes are right.
    from dload_arrow.read.shard_errors import corrupt_shard

    repo = Repository.open(local_root, cache_dir=cache_dir)
    _commit(repo)
    shard = repo.manifest("d").shards[0]
    path = os.path.join(local_root, shard_path(shard.digest))
    err = corrupt_shard(repo.read_context, shard.digest, "d", "an unknown encoding", path)
    assert "is intact" in str(err) and "upgrade pyarrow" in str(err)
    assert "--delete-bad" not in str(err) and os.path.exists(path)
    with open(path, "r+b") as f:  # one byte off: now it is corrupt
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xFF]))
    err = corrupt_shard(repo.read_context, shard.digest, "d", "an unknown encoding", path)
    assert "is corrupt" in str(err) and "--delete-bad" in str(err)


def test_eviction_and_clear_leave_no_lock_file_per_shard_ever_fetched(
        memory_root: str, cache_dir: str) -> None:
    writer = Repository.open(memory_root, cache_dir=cache_dir + "-w", cache_budget="unlimited")
    _commit(writer, n=1500)
    m = writer.manifest("d")
    repo = Repository.open(memory_root, cache_dir=cache_dir,
                           cache_budget=str(3 * max(s.bytes for s in m.shards)))
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 1500

    def files(sub: str) -> list[str]:
        return [f for _, _, fs in os.walk(os.path.join(cache_dir, sub)) for f in fs]

    assert len(files("locks")) <= len(files("shards")) < len(m.shards)  # evicted: gone too
    Cache(cache_dir, "unlimited").clear()
    assert files("shards") == [] and files("locks") == []
