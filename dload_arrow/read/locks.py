"""flock()-based locks on files of the cache directory, safe across processes and crashes,
and the reader's :class:`Hold` on a shard that one of them keeps from eviction.

The kernel drops a process's flock()s when it exits (SIGKILL too): nothing to clean up after a
crash. Lock files may be unlinked by whoever holds them exclusively; a locker that raced with
the unlink notices (its inode is not the path's) and tries again on the new file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable

from dload_arrow.errors import DloadError
from dload_arrow.read.abandon import check_abandoned

__all__ = ["FileLock", "Hold", "LockTimeout", "acquire_while", "held_here", "make_dirs",
           "parked_paths", "try_exclusive"]


class LockTimeout(DloadError, TimeoutError):
    """A cache lock was not obtained in time."""


def make_dirs(path: str) -> None:
    """``os.makedirs(path, exist_ok=True)``, raising FileNotFoundError when the folder is
    deleted while it is made (the cache removed by hand mid-read: callers make it again);
    ``os.makedirs`` raises FileExistsError then, having seen it exist an instant before."""
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        if os.path.lexists(path):  # a file where the folder goes: a real error
            raise
        raise FileNotFoundError(errno.ENOENT, "deleted while being made", path) from None


def _open(path: str) -> int:
    try:
        for attempt in range(3):  # the cache deleted while its folders were made: again
            try:
                make_dirs(os.path.dirname(path))
                return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except FileNotFoundError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")
    except OSError as e:
        # flock() needs no write access: an existing lock file of a cache this user may only
        # read (another user's, or a read-only copy) still tells whether someone holds it,
        # which is all a status report asks. Writers are refused earlier (Cache.shared).
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not os.path.isfile(path):
            raise
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _same_file(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    fst = os.fstat(fd)
    return (st.st_ino, st.st_dev) == (fst.st_ino, fst.st_dev)


# Shared locks (holds) this process has, by path: what a reader waiting for room says this
# process itself holds (a to_polars() frame, a paused iterator).
_SHARED_HERE: dict[str, int] = {}
_HERE_LOCK = threading.Lock()
# Of them, those parked: held by an object that lets them go only when the user drops it (a
# dataset's to_polars() frames), never by a reader that moves on (read/parked.py).
_PARKED: dict[str, int] = {}
# The holds of the process this one was forked from, when it was: its flock()s are still in
# force (a DataLoader worker's parent paused on them), and it may wait for this child.
_PARENTS: set[str] = set()
_PARENTS_PARKED: set[str] = set()  # (of them, its to_polars() frames': under a budget too)


def _forked() -> None:  # a forked child holds none of them (its parent's: see above)
    global _HERE_LOCK
    _HERE_LOCK = threading.Lock()  # (held by another thread of the parent at the fork)
    _PARENTS.update(_SHARED_HERE)
    _PARENTS_PARKED.update(_PARKED)
    _SHARED_HERE.clear()
    _PARKED.clear()


os.register_at_fork(after_in_child=_forked)


def held_here(path: str, *, parents: bool = False) -> bool:
    """Whether this process holds a shared lock on ``path`` (or, with ``parents``, its parent
    did at the fork: room it must not wait for, QA review63d)."""
    with _HERE_LOCK:
        return path in _SHARED_HERE or (parents and path in _PARENTS)


def parked_paths() -> list[str]:
    """The paths of this process's parked shared locks (see :meth:`FileLock.park`), and a
    forked child's parent's still held (a worker waited for them: QA review63e)."""
    with _HERE_LOCK:
        mine, theirs = list(_PARKED), sorted(_PARENTS_PARKED - _PARKED.keys())
    return mine + [p for p in theirs if p not in _SHARED_HERE and _still_held(p)]


def _still_held(path: str) -> bool:
    """Whether anyone holds ``path`` (a parent's hold, else forgotten: QA review63f)."""
    try:
        lock = try_exclusive(path) if os.path.exists(path) else None
    except OSError:
        return True
    if lock is not None:
        lock.release()  # (nobody's)
    elif os.path.exists(path):
        return True
    with _HERE_LOCK:
        _PARENTS_PARKED.discard(path)
        _PARENTS.discard(path)
    return False


class FileLock:
    """A held flock() on ``path``: shared (readers' holds) or exclusive (downloads, eviction).

    Each FileLock has its own open file description, so two locks of one process (or of two
    threads) on one path conflict exactly as locks of two processes do.
    """

    def __init__(self, path: str, fd: int, exclusive: bool) -> None:
        self.path = path
        self.fd: int | None = fd
        self.exclusive = exclusive
        self.pid = os.getpid()  # a forked child holds a copy of the descriptor, not the lock
        self.parked = False
        if not exclusive:
            with _HERE_LOCK:
                _SHARED_HERE[path] = _SHARED_HERE.get(path, 0) + 1

    @classmethod
    def acquire(
        cls, path: str, *, exclusive: bool, timeout: float | None = None, poll: float = 0.02
    ) -> FileLock:
        """Block until the lock is held (or ``timeout`` seconds pass: :class:`LockTimeout`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        op = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        while True:
            fd = _open(path)
            try:
                if deadline is None:
                    fcntl.flock(fd, op)
                else:
                    while True:
                        try:
                            fcntl.flock(fd, op | fcntl.LOCK_NB)
                            break
                        except OSError as e:
                            if e.errno not in (errno.EAGAIN, errno.EACCES):
                                raise
                            if time.monotonic() > deadline:
                                raise LockTimeout(
                                    f"waited {timeout:.0f}s for the lock {path}; another "
                                    "process holds it (a slow download?). Retry, or wait longer "
                                    "(DLOAD_CACHE_WAIT=seconds)"
                                ) from None
                            time.sleep(poll)
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, path):
                return cls(path, fd, exclusive)
            os.close(fd)  # the file was unlinked while we waited: lock the new one

    def park(self) -> None:
        """Mark this shared lock as held until its owner is dropped by the user, not by a
        reader that moves on: a wait for room it holds cannot end while the user waits."""
        if self.exclusive or self.parked or self.fd is None:
            return
        self.parked = True
        with _HERE_LOCK:
            _PARKED[self.path] = _PARKED.get(self.path, 0) + 1

    def is_current(self) -> bool:
        """Whether this lock is on the file now at its path (not on one deleted since)."""
        return self.fd is not None and _same_file(self.fd, self.path)

    def release(self, *, unlink: bool = False) -> None:
        """Drop the lock; with ``unlink`` (exclusive only) remove the lock file first."""
        if self.fd is None:
            return
        if unlink and self.exclusive:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self._drop()

    def _drop(self) -> None:
        """Unlock, then close. Closing alone frees a flock only with the last descriptor of
        its open file: a DataLoader worker forked while this process held the lock has a
        copy, and would keep the lock held for as long as it runs (every reader of the cache
        waited on it). A forked child only closes its copy: the lock is its parent's."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            if os.getpid() == self.pid:
                fcntl.flock(fd, fcntl.LOCK_UN)
                if not self.exclusive:
                    with _HERE_LOCK:
                        for held in (_SHARED_HERE, _PARKED) if self.parked else (_SHARED_HERE,):
                            if held.get(self.path, 0) > 1:
                                held[self.path] -= 1
                            else:
                                held.pop(self.path, None)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # a forgotten hold must not outlive its object
        with contextlib.suppress(OSError):
            self._drop()


def acquire_while(path: str, progress: Callable[[], object], timeout: float,
                  step: float = 5.0) -> FileLock:
    """The exclusive lock on ``path``, waited for as long as ``progress()`` keeps changing
    (another process's download growing its temp file): :class:`LockTimeout` only after
    ``timeout`` seconds in which it did not change. A slow link is not a stuck download."""
    last, deadline = progress(), time.monotonic() + timeout
    while True:
        try:
            return FileLock.acquire(path, exclusive=True,
                                    timeout=max(0.0, min(step, deadline - time.monotonic())))
        except LockTimeout:
            check_abandoned(f"the lock {path}")
            now = progress()
            if now != last:
                last, deadline = now, time.monotonic() + timeout
            elif time.monotonic() >= deadline:
                raise LockTimeout(
                    f"waited {timeout:.0f}s for the lock {path} without the download that "
                    "holds it making progress (another process, stalled or paused); retry, "
                    "stop that process, or wait longer (DLOAD_CACHE_WAIT=seconds)") from None


def try_exclusive(path: str) -> FileLock | None:
    """The exclusive lock on ``path`` if nobody holds any lock on it right now, else None.

    An absent file counts as unlocked; it is created (so the returned lock is real) and the
    caller should release it with ``unlink=True``.
    """
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EAGAIN, errno.EACCES):
            return None
        raise
    if not _same_file(fd, path):
        os.close(fd)
        return try_exclusive(path)
    return FileLock(path, fd, True)


class Hold:
    """A reader's claim on a local shard file: it is not evicted until released."""

    def __init__(self, path: str, digest: str, lock: FileLock | None,
                 downloaded: bool = False) -> None:
        self.path = path
        self.digest = digest
        self._lock = lock
        self.downloaded = downloaded  # this acquire fetched it (not another reader, not before)

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def park(self) -> None:
        """Held until the user drops its owner (:meth:`FileLock.park`)."""
        if self._lock is not None:
            self._lock.park()

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Hold({self.digest[:12]}, held={self._lock is not None})"
