"""The cache's budget: admission of new downloads, eviction to make room, trim and clear.

:class:`CacheBudget` adds a byte budget to :class:`~dload_arrow.read.cache_space.CacheSpace`.
Every decision is taken under the exclusive ``cache.lock``: scan what the cache holds (shards
plus the reservations of downloads in progress), evict unheld shards least recently used
first, and reserve the new shard's full size with its temp file before a byte is downloaded.
So bytes on disk never exceed the budget, whatever the processes sharing the directory do.

The budget in effect is never more than the disk can hold (:meth:`CacheBudget.limit`): what
the cache has written plus the free disk, less a small reserve. So an ``unlimited`` budget, or
one set for a bigger disk, slides over data larger than the disk instead of filling it.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import threading
import time
import uuid
import warnings
from collections.abc import Collection

from dload_arrow.errors import ConfigError, InfeasiblePlanError
from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.abandon import check_abandoned
from dload_arrow.read.cache_disk import disk_full
from dload_arrow.read.cache_space import (
    CacheSpace,
    claim_cache_dir,
    disk_reserve,
    list_dir,
    resolve_budget,
)
from dload_arrow.read.locks import FileLock, held_here, make_dirs
from dload_arrow.read.parked import here_text, parked_bytes, parked_refusal
from dload_arrow.sizes import BUDGET_WAYS, format_bytes, format_bytes_up

__all__ = ["LOOK_AHEAD_PAUSE", "CacheBudget"]

#: Seconds that downloads ahead of the readers pause after the local disk refused a download.
LOOK_AHEAD_PAUSE = 5.0

_POLL = 0.05
_TELL_AFTER = 5.0  # seconds of waiting for room before a reader says it waits

WAIT_ENV = "DLOAD_CACHE_WAIT"
_SMALL = ("footers", "manifests", "verified")  # what clear() removes beside the shards


def wait_seconds() -> float:
    """Seconds a reader waits for cache room or another process's stalled download:
    ``DLOAD_CACHE_WAIT`` (a positive number), else 600."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return 600.0
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{WAIT_ENV}={text!r} is not a number of seconds; set it to a "
                          "positive number such as 1800, or unset it for the default 600")
    return value


class CacheBudget(CacheSpace):
    """A cache directory (refused unless it is one: ``claim_cache_dir``) within ``budget``.

    Args:
        cache_dir: the directory (created if absent), shared by every process of the machine.
        budget: ``"auto"`` (half the free disk when opened, counting what the cache holds),
            ``"unlimited"``, a size such as ``"60GB"``, or bytes.
        wait_timeout: seconds to wait for room (all bytes held by live readers) before giving
            up with a clear error (default: ``DLOAD_CACHE_WAIT``, else 600).
    """

    def __init__(self, cache_dir: str, budget: str | int = "auto", *,
                 wait_timeout: float | None = None, report: bool = False) -> None:
        super().__init__(cache_dir)
        if not (report and not os.path.lexists(self.dir)):  # a report makes no cache dir
            claim_cache_dir(self.dir)  # never evict in a root or another directory's shards/
            os.makedirs(os.path.join(self.dir, "shards"), exist_ok=True)
        self.wait_timeout = wait_seconds() if wait_timeout is None else wait_timeout
        self.budget_text = str(budget)
        self._tlock = threading.Lock()
        used = self.used_bytes() if str(budget).strip().lower() == "auto" else 0
        self.budget_bytes = resolve_budget(budget, self.dir, used)
        self._refused_at = -LOOK_AHEAD_PAUSE  # when the disk last refused a download

    def check_writable(self) -> None:
        """Raise PermissionError unless this user can write the cache: readers create hold,
        lock and download files in it. A cache filled by another user, or made read-only,
        is refused here (ReadContext.cache turns this into a ConfigError naming the setting)
        rather than on the first hold, deep inside a read."""
        subs = [os.path.join(self.dir, sub) for sub in ("shards", "holds", "locks")]
        for folder in [self.dir, *subs, *_subfolders(subs)]:
            if os.path.isdir(folder) and not os.access(folder, os.W_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), folder)
        lock = os.path.join(self.dir, "cache.lock")
        if os.path.exists(lock) and not os.access(lock, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), lock)

    def limit(self) -> int:
        """The budget in effect now: the configured one, or less when the disk cannot hold
        it (what the cache has written plus the free disk, less a small reserve)."""
        used, pending, _entries = self._scan_pending(cleanup=False)
        return min(self.budget_bytes, self._disk_cap(used, pending))

    def evictable_bytes(self, exclude: Collection[str] = ()) -> tuple[int, int]:
        """Bytes of the cached shards but those in ``exclude``: those no live reader holds
        (what eviction could free for them now), and those other processes' readers hold
        (room once they let go); a stat and a lock try per shard."""
        entries = [e for e in self.entries() if e.digest not in exclude]
        return (sum(e.bytes for e in entries if not e.held),  # (this process's holds: a
                sum(e.bytes for e in entries if e.held  # paused iterator, a to_polars()
                    and not held_here(self._hold_file(e.digest), parents=True)))  # frame)

    def _disk_cap(self, used: int, pending: int) -> int:
        # Free disk measured after the scan: a download writing meanwhile can only make the
        # cap lower than the truth, never higher. Eviction does not change it (bytes deleted
        # come back as free disk), so it is the most the cache can ever hold on this disk.
        return max(0, used - pending + self.free_disk() - disk_reserve(self.dir))

    def _limit_text(self, limit: int) -> str:
        if limit < self.budget_bytes:
            return (f"{format_bytes(limit)} that its disk can hold (budget "
                    f"{self.budget_text})")
        return f"{format_bytes(limit)} budget"

    def trim(self) -> int:
        """Evict least recently used shards no live reader holds until the cache is within
        its budget (another process may have filled it under a larger one); bytes freed."""
        if self.budget_bytes >= UNLIMITED:
            return 0
        freed = 0
        with self._tlock, FileLock.acquire(os.path.join(self.dir, "cache.lock"), exclusive=True):
            used, candidates = self._scan(cleanup=True)
            for _stamp, cand, size in candidates:
                if used - freed <= self.budget_bytes:
                    break
                if self._evict(cand):
                    freed += size
        return freed

    def free_room(self, nbytes: int, keep: frozenset[str] = frozenset()) -> int:
        """Evict least recently used shards no live reader holds, those in ``keep`` last,
        until ``nbytes`` are freed; the bytes freed. For a download the disk refused: the
        disk had less room than admission measured (another program wrote to it since)."""
        freed = 0
        with self._tlock, FileLock.acquire(os.path.join(self.dir, "cache.lock"), exclusive=True):
            candidates = self._scan(cleanup=True)[1]
            for _stamp, digest, size in sorted(candidates, key=lambda c: c[1] in keep):
                if freed >= nbytes:
                    break
                if self._evict(digest):
                    freed += size
        return freed

    def disk_refused(self, e: BaseException) -> OSError | None:
        """The error in ``e``'s chain saying the local disk refused a write (full, over quota,
        file too large), remembered: downloads ahead pause for :data:`LOOK_AHEAD_PAUSE`
        seconds, so that they do not take the room the readers' own downloads retry in."""
        full = disk_full(e)
        if full is not None:
            self._refused_at = time.monotonic()
        return full

    def look_ahead_paused(self) -> bool:
        """Whether the disk refused a download less than :data:`LOOK_AHEAD_PAUSE` s ago."""
        return time.monotonic() - self._refused_at < LOOK_AHEAD_PAUSE

    def clear(self) -> int:
        """Remove every shard no live reader holds, the cached footers and manifests (small,
        fetched again when needed) and the marks of local shards read whole (verified.py:
        checked again); return the bytes freed."""
        freed = 0
        with self._tlock, FileLock.acquire(os.path.join(self.dir, "cache.lock"), exclusive=True):
            for _stamp, digest, size in self._scan(cleanup=True)[1]:
                if self._evict(digest):
                    freed += size
        for folder, _dirs, files in itertools.chain(*(
                os.walk(os.path.join(self.dir, sub)) for sub in _SMALL)):
            for name in files:
                if ".tmp" not in name:  # one being written now is left to its writer
                    path = os.path.join(folder, name)
                    with contextlib.suppress(OSError):
                        size = os.path.getsize(path)
                        os.unlink(path)
                        freed += size
        return freed

    def partial_file(self, digest: str) -> str | None:
        """The temp file of a download of ``digest`` in progress (any process's), if any."""
        final = self.shard_file(digest)
        prefix = os.path.basename(final) + ".tmp-"
        for e in list_dir(os.path.dirname(final)):
            if e.name.startswith(prefix):
                return e.path
        return None

    def download_progress(self, *digests: str) -> tuple[int, int]:
        """Bytes and latest mtime of every download of ``digests`` in progress, shards in
        place included: it changes while any of them goes on (a dead download's temp file
        beside a live one does not hide the live one)."""
        size = latest = 0
        for digest in digests:
            final = self.shard_file(digest)
            prefix = os.path.basename(final)
            for e in list_dir(os.path.dirname(final)):
                if e.name.startswith(prefix):
                    with contextlib.suppress(OSError):  # renamed or removed meanwhile
                        st = e.stat()
                        size, latest = size + st.st_size, max(latest, st.st_mtime_ns)
        return size, latest

    def _reserve(self, digest: str, nbytes: int, *, wait: bool = True,
                 keep: frozenset[str] = frozenset()) -> str | None:
        """Make room for ``nbytes`` and create the temp file that reserves them.

        Without ``wait`` (a download ahead of the reader), only room that can be had right
        now is taken, never by evicting a shard in ``keep``, and None says there is none:
        such a download never waits for room that a reader's current shard may need. With
        ``wait``, shards in ``keep`` go after every other unheld shard.

        ``keep`` is the reader's look-ahead: shards fetched ahead and not read yet. Least
        recently used order alone would evict them first, since they were stamped when
        fetched, before the shard the reader has just finished.
        """
        if nbytes > self.budget_bytes:
            raise InfeasiblePlanError(
                f"shard {digest[:12]} ({format_bytes(nbytes)}) is larger than the whole cache "
                f"budget ({format_bytes(self.budget_bytes)}) of {self.dir}; raise the budget "
                f"to at least {format_bytes_up(nbytes)} ({BUDGET_WAYS}) "
                "or commit with a smaller shard_size"
            )
        start = time.monotonic()
        deadline, told = start + self.wait_timeout, False
        while True:
            with self._tlock, FileLock.acquire(os.path.join(self.dir, "cache.lock"),
                                               exclusive=True):
                used, pending, entries = self._scan_pending(cleanup=True)
                limit = min(self.budget_bytes, self._disk_cap(used, pending))
                if nbytes > limit:  # nothing evicted can make room: the disk is too small
                    raise InfeasiblePlanError(
                        f"shard {digest[:12]} ({format_bytes(nbytes)}) does not fit the disk "
                        f"of the cache {self.dir}: the cache can hold at most "
                        f"{format_bytes(limit)} there ({format_bytes(self.free_disk())} free); "
                        "free disk space there, point cache_dir at a bigger disk, or commit "
                        "with a smaller shard_size"
                    )
                excess = used + nbytes - limit
                candidates = entries() if excess > 0 else []  # a stat per shard: when needed
                if keep:
                    later = [c for c in candidates if c[1] in keep] if wait else []
                    candidates = [c for c in candidates if c[1] not in keep] + later
                if self._evict_for(candidates, excess):
                    final = self.shard_file(digest)
                    make_dirs(os.path.dirname(final))
                    tmp = f"{final}.tmp-{nbytes}-{uuid.uuid4().hex[:12]}"
                    open(tmp, "wb").close()
                    return tmp
            if not wait:
                return None
            parked = parked_bytes(self, exclude=(digest,))  # room no wait can free (QA nb58)
            if parked and nbytes > limit - parked:
                raise parked_refusal(self.dir, f"shard {digest[:12]}", nbytes, parked, limit)
            if not told and time.monotonic() - start > min(_TELL_AFTER, self.wait_timeout / 2):
                told = True  # a reader that waits says so, rather than look hung
                warnings.warn(
                    f"waiting for room in the cache {self.dir} for shard {digest[:12]} "
                    f"({format_bytes(nbytes)}): {format_bytes(used)} of the "
                    f"{self._limit_text(limit)} are held by readers running now"
                    f"{here_text(self)}; giving up after {self.wait_timeout:.0f}s",
                    stacklevel=2)
            check_abandoned(f"room in the cache for shard {digest[:12]}")
            if time.monotonic() > deadline:
                raise InfeasiblePlanError(
                    f"no room in the cache {self.dir} for shard {digest[:12]} "
                    f"({format_bytes(nbytes)}): {format_bytes(used)} of the "
                    f"{self._limit_text(limit)} are held by live readers{here_text(self)} "
                    f"and none was released in {self.wait_timeout:.0f}s: pipelines reading now (in "
                    "this process too: a paused iterator holds its shard) and datasets whose "
                    "to_polars() LazyFrame holds its files (drop the dataset to free them). "
                    "Raise the budget, lower prefetch, run fewer readers at once, or wait "
                    f"longer ({WAIT_ENV}=seconds)"
                )
            time.sleep(_POLL)

def _subfolders(folders: list[str]) -> list[str]:
    """The folders inside ``folders`` (``shards/<aa>``: at most 256 of them)."""
    out = []
    for folder in folders:
        try:
            out += [e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        except OSError:  # absent, or unreadable (then its own check names it)
            continue
    return out
