"""Cache locks across fork(): a DataLoader worker forked while the training process held a
cache lock must not keep that lock held (flock() belongs to the open file, which the worker
shares), and a lock of ours that a parent thread held at the fork is free in the child."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pytest

from dload_arrow.read.cache import Cache
from dload_arrow.read.locks import FileLock, try_exclusive
from dload_arrow.storage import shared_fs

_FORK = mp.get_context("fork")


def _wait(done: Any) -> None:
    done.wait(30)


def test_a_lock_released_by_the_parent_is_free_while_a_forked_child_lives(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.lock")
    lock = FileLock.acquire(path, exclusive=True)
    done = _FORK.Event()
    child = _FORK.Process(target=_wait, args=(done,))  # a DataLoader worker, still running
    child.start()
    try:
        lock.release()
        FileLock.acquire(path, exclusive=True, timeout=3).release()  # was: held until exit
    finally:
        done.set()
        child.join(30)


def _release_inherited(lock: FileLock, out: Any) -> None:
    lock.release()  # the child's copy of the parent's lock: closing it must not unlock it
    del lock
    out.put("released")


def test_a_forked_child_dropping_its_copy_leaves_the_parents_lock_held(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.lock")
    lock = FileLock.acquire(path, exclusive=True)
    out = _FORK.Queue()
    child = _FORK.Process(target=_release_inherited, args=(lock, out))
    child.start()
    assert out.get(timeout=30) == "released"
    child.join(30)
    assert try_exclusive(path) is None  # still the parent's
    lock.release()
    free = try_exclusive(path)
    assert free is not None
    free.release()


def _open_cache(cache_dir: str, out: Any) -> None:
    Cache.shared(cache_dir, "10MB")
    with shared_fs._LOCK:
        pass
    out.put("ok")


@pytest.mark.timeout(120)
def test_our_thread_locks_held_at_a_fork_are_free_in_the_child(tmp_path: Path) -> None:
    out = _FORK.Queue()
    with Cache._shared_lock, shared_fs._LOCK:  # as a parent thread inside them at the fork
        child = _FORK.Process(target=_open_cache, args=(str(tmp_path / "c"), out))
        child.start()
    assert out.get(timeout=20) == "ok"
    child.join(30)
    assert child.exitcode == 0


def test_a_download_that_progresses_is_waited_for_past_the_timeout(tmp_path: Path) -> None:
    import itertools
    import threading
    import time

    from dload_arrow.read.locks import LockTimeout, acquire_while

    path = str(tmp_path / "dl.lock")
    held = FileLock.acquire(path, exclusive=True)  # another download of the shard
    threading.Timer(1.5, held.release).start()
    ticks = itertools.count()  # its temp file grows at each look
    t0 = time.monotonic()
    lock = acquire_while(path, lambda: next(ticks), timeout=0.5, step=0.1)
    assert time.monotonic() - t0 >= 1.0  # waited past the timeout: it made progress
    lock.release()
    stalled = FileLock.acquire(path, exclusive=True)
    t0 = time.monotonic()
    with pytest.raises(LockTimeout, match="without the download that holds it making progress"):
        acquire_while(path, lambda: 7, timeout=0.5, step=0.1)
    assert 0.4 < time.monotonic() - t0 < 5
    stalled.release()


def test_a_live_download_beside_dead_temp_files_shows_progress(tmp_path: Path) -> None:
    cache = Cache(str(tmp_path / "c"), "10MB")
    digest = "ab" + "0" * 62
    final = Path(cache.shard_file(digest))
    final.parent.mkdir(parents=True, exist_ok=True)
    for i in range(5):  # downloads of killed processes, never growing again
        Path(f"{final}.tmp-9-dead{i}").write_bytes(b"x" * 3)
    live = Path(f"{final}.tmp-9-live")
    live.write_bytes(b"")
    before = cache.download_progress(digest)
    with live.open("ab") as f:
        f.write(b"more")
    assert cache.download_progress(digest) != before
