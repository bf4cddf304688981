"""The machine-wide shard cache: a byte budget, LRU eviction, shared by every process.

Layout under ``cache_dir``::

    shards/<aa>/<sha>.parquet              verified shard (mtime = the "verified" stamp)
    shards/<aa>/<sha>.parquet.tmp-<n>-<r>  download in progress, reserving n bytes
    holds/<aa>/<sha>                       readers hold a shared flock(); mtime = last use
    locks/<aa>/<sha>                       the downloader holds an exclusive flock()
    cache.lock                             admission and eviction, one process at a time
    gather.lock                            one query at a time gathers all its shards (SQL)
    CACHEDIR.TAG                           marks the directory as a cache: no other is used

Every guarantee rests on flock(), which the kernel drops when a process dies, so a crashed
reader's holds and a crashed downloader's reservations vanish by themselves. Only shards being
read are held; shards fetched ahead (``prefetch``) take free room only and stay evictable, so
processes sharing a small budget never wait on each other's look-ahead. See docs/DESIGN.md,
"Reading and the cache".
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Iterable
from typing import ClassVar, NoReturn

from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.cache_budget import CacheBudget
from dload_arrow.read.cache_disk import cache_disk_error
from dload_arrow.read.cache_fetch import (
    REMOVED_TRIES,
    CacheRemoved,
    cache_removed_error,
    fetch_into,
    reclaim,
)
from dload_arrow.read.cache_space import (
    VERIFIED_NS,
    CacheEntry,
    free_disk,
    resolve_budget,
)
from dload_arrow.read.locks import FileLock, Hold, acquire_while, try_exclusive
from dload_arrow.sizes import format_bytes
from dload_arrow.storage import Storage

__all__ = ["Cache", "CacheEntry", "Hold", "free_disk", "resolve_budget", "sha256_file"]

_DISK_FULL_TRIES = 4  # a reader's download that the local disk refused: evict, try again


class Cache(CacheBudget):
    """Shards of any root, stored once per machine under ``cache_dir`` within ``budget``.

    Args:
        cache_dir: the directory (created if absent, refused if it is a root or holds shards
            of something that is not a cache), shared by every process of the machine.
        budget: ``"auto"`` (half the free disk when opened, counting what the cache holds),
            ``"unlimited"``, a size such as ``"60GB"``, or bytes.
        wait_timeout: seconds to wait for room (all bytes held by live readers) or for another
            process's download before giving up with a clear error.
    """

    _shared: ClassVar[dict[tuple[int, str, str], Cache]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls, cache_dir: str, budget: str | int = "auto") -> Cache:
        """One Cache object per (process, directory, budget): threads share it."""
        key = (os.getpid(), os.path.abspath(os.path.expanduser(cache_dir)), str(budget))
        with cls._shared_lock:
            cache = cls._shared.get(key)
            if cache is None:
                cache = cls(cache_dir, budget)
                cache.check_writable()
                cache.trim()  # a smaller budget than the last process's takes effect now
                cls._shared[key] = cache  # only once usable: every later open fails alike
            return cache

    def __repr__(self) -> str:
        budget = "unlimited" if self.budget_bytes >= UNLIMITED else format_bytes(self.budget_bytes)
        return f"Cache({self.dir!r}, budget={budget})"

    # --- reading ----------------------------------------------------------------------------

    def is_cached(self, digest: str, nbytes: int) -> bool:
        """Whether a file of the right size is present (cheap: one stat)."""
        try:
            return os.stat(self.shard_file(digest)).st_size == nbytes
        except FileNotFoundError:
            return False

    def cached_bytes(self, shards: Iterable[tuple[str, int]]) -> int:
        """Bytes of the given ``(digest, nbytes)`` shards already present."""
        return sum(n for d, n in set(shards) if self.is_cached(d, n))

    def acquire(self, storage: Storage, digest: str, nbytes: int, *,
                dataset: str | None = None, keep: frozenset[str] = frozenset()) -> Hold:
        """Hold shard ``digest`` locally, downloading it (once per machine) if needed.

        The returned :class:`Hold` keeps the file from eviction until released (or until the
        process exits). Raises IntegrityError when the root's copy does not match its digest,
        and InfeasiblePlanError when no room appears within ``wait_timeout``. Making room
        evicts the shards in ``keep`` (the caller's look-ahead) only after every other
        unheld shard.
        """
        final = self.shard_file(digest)
        try:
            hold = FileLock.acquire(self._hold_file(digest), exclusive=False)
        except OSError as e:  # a hold file is a new inode: a full disk refuses it too
            self._reraise(e, digest, nbytes, dataset)
        try:
            os.utime(hold.path)  # the LRU clock
            if self._trusted(final, nbytes):
                return Hold(final, digest, hold)
            dl = acquire_while(self._lock_file(digest), lambda: self.download_progress(digest),
                               self.wait_timeout)  # another process downloading it: wait
            try:
                fetch = not self._usable(final, digest, nbytes)
                if fetch:
                    self._download_making_room(storage, digest, nbytes, dataset, keep, dl)
            finally:
                dl.release()  # no unlink: a waiter on the old inode would hold a hidden lock
            return Hold(final, digest, hold, fetch)
        except BaseException:
            hold.release()
            raise

    def _download_making_room(self, storage: Storage, digest: str, nbytes: int,
                              dataset: str | None, keep: frozenset[str], dl: FileLock) -> None:
        """A reader's download. When the local disk refuses it (another program filled the
        disk since admission measured it, or downloads ahead took the room), downloads ahead
        pause, unheld shards are evicted and it tries again; then the error names the cache."""
        for attempt in range(_DISK_FULL_TRIES):
            try:
                self._download(storage, digest, nbytes, dataset, dl, keep=keep)
                return
            except OSError as e:
                if self.disk_refused(e) is None or attempt + 1 == _DISK_FULL_TRIES:
                    self._reraise(e, digest, nbytes, dataset)
                if not self.free_room(nbytes, keep):
                    time.sleep(0.1 * 2**attempt)  # downloads ahead in flight give up meanwhile

    def _reraise(self, e: OSError, digest: str, nbytes: int, dataset: str | None) -> NoReturn:
        """Raise ``e``, or when the local disk refused the write, the cache's own error naming
        this directory (not the root the shard came from) and the fix."""
        full = self.disk_refused(e)
        if full is None:
            raise e
        raise cache_disk_error(self.dir, digest, nbytes, dataset, full) from e

    def prefetch(self, storage: Storage, digest: str, nbytes: int, *,
                 dataset: str | None = None, keep: frozenset[str] = frozenset()) -> bool:
        """Bring shard ``digest`` into the cache ahead of its reader, holding nothing after.

        A download ahead takes only room that is free (or unheld) right now and skips a shard
        another process is downloading, and once there its shard stays evictable until the
        reader holds it with :meth:`acquire`. So look-ahead never keeps anyone's current
        shard (this process's or another's) out of the cache: readers sharing a small budget
        each wait only for shards being read. It never evicts the shards in ``keep`` (the
        caller's other shards fetched ahead, not yet read: evicting one would fetch it twice).
        True when the shard is cached and verified; False when it was skipped (the reader's
        ``acquire`` fetches it then), also when the local disk refused it or another download
        lately (:meth:`disk_refused`): its partial file is removed, and the reader's
        ``acquire`` makes room by eviction and says so if there is still none.
        """
        try:
            return self._prefetch(storage, digest, nbytes, dataset, keep)
        except OSError as e:
            if self.disk_refused(e) is None:
                raise
            return False

    def _prefetch(self, storage: Storage, digest: str, nbytes: int, dataset: str | None,
                  keep: frozenset[str]) -> bool:
        final = self.shard_file(digest)
        hold = FileLock.acquire(self._hold_file(digest), exclusive=False)
        try:
            # the LRU clock: evicted after the shards read before it (no file: the cache dir
            # was deleted meanwhile, and the download below makes it again)
            with contextlib.suppress(FileNotFoundError):
                os.utime(hold.path)
            if self._trusted(final, nbytes):
                return True
            if self.look_ahead_paused():
                return False  # the disk refused a download lately: the reader's come first
            dl = try_exclusive(self._lock_file(digest))
            if dl is None:
                return False  # being downloaded by another process or thread
            try:
                return (self._usable(final, digest, nbytes)
                        or self._download(storage, digest, nbytes, dataset, dl, wait=False,
                                          keep=keep))
            finally:
                dl.release()  # no unlink: a waiter on the old inode would hold a hidden lock
        finally:
            hold.release()

    def try_hold(self, digest: str, nbytes: int) -> Hold | None:
        """Hold ``digest`` only if it is cached and verified already; never downloads."""
        final = self.shard_file(digest)
        if not os.path.exists(final):
            return None
        hold = FileLock.acquire(self._hold_file(digest), exclusive=False)
        if self._trusted(final, nbytes):
            with contextlib.suppress(FileNotFoundError):  # (the cache dir deleted meanwhile)
                os.utime(hold.path)
            return Hold(final, digest, hold)
        hold.release()
        return None

    def _trusted(self, final: str, nbytes: int) -> bool:
        try:
            st = os.stat(final)
        except FileNotFoundError:
            return False
        return st.st_size == nbytes and st.st_mtime_ns == VERIFIED_NS

    def _usable(self, final: str, digest: str, nbytes: int) -> bool:
        # Called with the download lock held: nobody else is replacing the file.
        try:
            st = os.stat(final)
        except FileNotFoundError:
            return False
        if st.st_size == nbytes and (
            st.st_mtime_ns == VERIFIED_NS or sha256_file(final) == digest
        ):
            if st.st_mtime_ns != VERIFIED_NS:  # (set only by its owner: another user of a
                with contextlib.suppress(PermissionError):  # group's cache, QA perms66)
                    os.utime(final, ns=(VERIFIED_NS, VERIFIED_NS))
            return True
        os.unlink(final)  # modified or truncated since verified: fetch it again
        return False

    def _download(self, storage: Storage, digest: str, nbytes: int, dataset: str | None,
                  dl: FileLock, *, wait: bool = True, keep: frozenset[str] = frozenset()
                  ) -> bool:
        """Download and verify ``digest`` into place; False (``wait`` off) when no room now.

        The cache directory deleted under the download (its temp file gone) is recreated and
        the shard fetched again, up to REMOVED_TRIES times; then the error names the cache.
        ``dl`` is the caller's download lock. When the directory went, it is on a deleted
        file: the lock is taken again in the new directory, or another thread's scan would
        judge the new temp file stale and delete it."""
        relocked: list[FileLock] = []
        try:
            for attempt in range(1, REMOVED_TRIES + 1):
                try:
                    tmp = self._reserve(digest, nbytes, wait=wait, keep=keep)
                    if tmp is None:
                        return False
                except FileNotFoundError as e:  # the directory went while reserving
                    gone: BaseException = e
                else:
                    try:
                        fetch_into(tmp, self.shard_file(digest), storage, digest, nbytes,
                                   dataset)
                        return True
                    except CacheRemoved as e:
                        gone = e.__cause__ or e
                if attempt == REMOVED_TRIES:
                    raise cache_removed_error(self.dir, digest, dataset) from gone
                try:
                    reclaim(self.dir)
                    if not any(lock.is_current() for lock in (dl, *relocked)):
                        got = FileLock.acquire(self._lock_file(digest), exclusive=True,
                                               timeout=self.wait_timeout) if wait else \
                            try_exclusive(self._lock_file(digest))
                        if got is None:
                            return False  # a download ahead: another thread has it now
                        relocked.append(got)
                        if self._usable(self.shard_file(digest), digest, nbytes):
                            return True  # another downloader fetched it in the new folder
                except FileNotFoundError as e:  # still being deleted: once more
                    gone = e
            raise AssertionError("unreachable")
        finally:
            for lock in relocked:
                lock.release()


def sha256_file(path: str) -> str:
    """The hex sha256 of a complete file (a cached shard checked again)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 * 2**20):
            h.update(chunk)
    return h.hexdigest()


def _after_fork() -> None:
    # A parent thread in Cache.shared() at the fork would leave the child's copy held forever.
    Cache._shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)
