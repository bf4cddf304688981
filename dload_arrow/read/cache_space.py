"""The cache's disk: where shards, downloads and locks live, and what they add up to.

``CacheSpace`` knows the layout under ``cache_dir`` (see :mod:`dload_arrow.read.cache`) and
does the accounting every admission decision rests on: the bytes of verified shards plus the
reservations of downloads in progress, the shards in least-recently-used order, and eviction
of a shard that no live reader holds. :class:`~dload_arrow.read.cache.Cache` adds the budget,
downloads and holds on top.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from dload_arrow.errors import ConfigError, InvalidNameError
from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.cache_scan import FolderListings
from dload_arrow.read.locks import FileLock, try_exclusive
from dload_arrow.read.stale_temps import dead_download, remove_stale
from dload_arrow.sizes import parse_size
from dload_arrow.store.names import check_digest

__all__ = ["MARKER", "VERIFIED_NS", "CacheEntry", "CacheSpace", "claim_cache_dir", "disk_reserve",
           "free_disk", "is_cache_marker", "list_dir", "resolve_budget"]

# A verified shard's mtime. Any write to the file moves its mtime, so a cached file whose
# size and stamp match was not modified since its sha256 was checked; anything else is
# re-hashed before use (and fetched again if it does not match).
VERIFIED_NS = 946_684_800 * 10**9


# Written when a cache directory is created (a standard cache directory tag: backup tools skip
# the folder). Eviction deletes files under shards/, the very layout of a root's shards, so a
# directory is only used as a cache when it is known to be one (see claim_cache_dir).
MARKER = "CACHEDIR.TAG"
_MARKER_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This directory is a dload_arrow shard cache: its shards may be deleted at any time.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_FIX = ("point the cache at a directory of its own (DLOAD_CACHE_DIR, --cache-dir, cache_dir= "
        "in Repository.open or 'cache_dir' in dload.toml), e.g. ~/.cache/dload")


def claim_cache_dir(cache_dir: str) -> None:
    """Make sure ``cache_dir`` is a dload cache, creating it (with its marker) if new.

    A storage root (it holds ``datasets/``) is refused, and so is a directory whose
    ``shards/`` holds files while nothing says it is a cache: evicting there would delete
    shards that are not copies. Caches made before the marker existed (``shards/`` next to
    ``cache.lock``, which every admission takes) are recognised and marked.

    Raises:
        ConfigError: naming the directory, why it is not a cache, and how to choose another.
    """
    d = os.path.abspath(os.path.expanduser(cache_dir))
    if os.path.isdir(os.path.join(d, "datasets")):
        raise ConfigError(
            f"cannot use {d} as the cache dir: it holds datasets/, so it is a dload root, and "
            f"evicting cached shards there would delete the root's own shards; {_FIX}"
        )
    marker = os.path.join(d, MARKER)
    if is_cache_marker(marker):
        return
    if list_dir(os.path.join(d, "shards")) and not os.path.exists(os.path.join(d, "cache.lock")):
        raise ConfigError(
            f"cannot use {d} as the cache dir: its shards/ folder holds files but it is not a "
            f"dload cache (no {MARKER}), so they may be a root's shards that eviction would "
            f"delete; {_FIX}"
        )
    os.makedirs(d, exist_ok=True)
    tmp = f"{marker}.tmp-{uuid.uuid4().hex[:12]}"
    with open(tmp, "w") as f:
        f.write(_MARKER_TEXT)
    os.replace(tmp, marker)


def is_cache_marker(path: str) -> bool:
    """Whether the file at ``path`` is a dload cache's CACHEDIR.TAG (not another tool's)."""
    try:
        with open(path) as f:
            return "dload_arrow" in f.read(4096)
    except (OSError, UnicodeDecodeError):  # (missing, a folder, unreadable)
        return False


def free_disk(path: str) -> int:
    """Bytes available to this user on the filesystem holding ``path`` (or its parent)."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    st = os.statvfs(p)
    return int(st.f_bavail * st.f_frsize)


def disk_reserve(path: str) -> int:
    """Bytes the cache leaves free on its disk: 1% of the disk, at most 64 MiB. Footers,
    manifests and lock files are not in the shard accounting, and a disk filled to its last
    block fails every program writing there."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    st = os.statvfs(p)
    return min(_RESERVE_MAX, st.f_blocks * st.f_frsize // 100)


_RESERVE_MAX = 64 * 2**20
Entry = tuple[float, str, int]  # (last used, digest, bytes)


def resolve_budget(budget: str | int, cache_dir: str, used: int = 0) -> int:
    """Bytes from ``auto`` (half of free disk plus what the cache holds), ``unlimited``, a size."""
    text = str(budget).strip().lower()
    if text == "unlimited":
        return UNLIMITED
    if text == "auto":
        return (free_disk(cache_dir) + used) // 2
    try:
        return parse_size(budget, "cache budget")
    except ConfigError as e:
        raise ConfigError(f"{e}; or use 'auto' (half the free disk) or 'unlimited'") from e


@dataclass(frozen=True)
class CacheEntry:
    """A shard in the cache."""

    digest: str
    bytes: int
    last_used: float
    held: bool


class CacheSpace:
    """The files of a cache directory: paths, the bytes they use, and eviction."""

    def __init__(self, cache_dir: str) -> None:
        self.dir = os.path.abspath(os.path.expanduser(cache_dir))
        self._listings = FolderListings(os.path.join(self.dir, "cache.lock"))

    def shard_file(self, digest: str) -> str:
        """Where the verified shard ``digest`` lives when cached."""
        check_digest(digest, "shard digest")
        return os.path.join(self.dir, "shards", digest[:2], f"{digest}.parquet")

    def _hold_file(self, digest: str) -> str:
        return os.path.join(self.dir, "holds", digest[:2], digest)

    def _lock_file(self, digest: str) -> str:
        return os.path.join(self.dir, "locks", digest[:2], digest)

    def free_disk(self) -> int:
        return free_disk(self.dir)

    def _scan(self, cleanup: bool) -> tuple[int, list[Entry]]:
        """Bytes used (files plus reservations) and the cached shards, least recently used first."""
        used, _pending, entries = self._scan_pending(cleanup)
        return used, entries()

    def _scan_pending(self, cleanup: bool, dead: list[int] | None = None
                      ) -> tuple[int, int, Callable[[], list[Entry]]]:
        """Bytes used (files plus reservations), the bytes reserved by downloads in progress
        but not written yet (counted in used, yet still free on the disk), and a function of
        the shards least recently used first (a stat per shard: only eviction needs it).
        With ``dead``: a dead downloader's temp file is left out, its size appended there."""
        used = pending = 0
        shards: dict[str, int] = {}
        clock: list[int | None] = []  # the filesystem's time, read once before a listing
        for sub in list_dir(os.path.join(self.dir, "shards")):
            if not sub.is_dir():
                continue
            known, mtime_ns = self._listings.known(sub.path)
            if known is not None:
                shards.update(known)
                continue
            clock = clock or [self._listings.now_ns()]
            listed_at, mine, clean = clock[0], {}, True
            for e in list_dir(sub.path):
                name = e.name
                if name.endswith(".parquet"):
                    with contextlib.suppress(FileNotFoundError):
                        mine[name[: -len(".parquet")]] = e.stat().st_size
                elif ".parquet.tmp-" in name:
                    clean = False
                    digest, rest = name.split(".parquet.tmp-", 1)
                    try:
                        size = e.stat().st_size
                        if cleanup and remove_stale(e.path, self._lock_file(digest)):
                            continue
                        if dead is not None and dead_download(self._lock_file(digest)):
                            dead.append(size)  # status: its bytes, not a download (after
                            continue  # a SIGKILL, QA sharedcache63; a reader removes it)
                    except FileNotFoundError:
                        # Renamed to its final name after the listing was taken (downloads
                        # finish outside cache.lock, and release their download lock right
                        # after): count the shard it became, once.
                        if digest not in mine:
                            with contextlib.suppress(FileNotFoundError, InvalidNameError):
                                mine[digest] = os.stat(self.shard_file(digest)).st_size
                        continue
                    try:
                        reserved = int(rest.split("-", 1)[0])
                    except ValueError:
                        reserved = size
                    used += max(size, reserved)
                    pending += max(0, reserved - size)
            if clean:
                self._listings.remember(sub.path, mtime_ns, mine, listed_at)
            shards.update(mine)
        used += sum(shards.values())
        return used, pending, lambda: sorted(
            (_mtime(self._hold_file(d)), d, n) for d, n in shards.items())

    def _evict(self, digest: str) -> bool:
        lock = try_exclusive(self._hold_file(digest))
        if lock is None:
            return False  # a live reader holds it
        try:
            self._unlink_shard(digest)
        finally:
            lock.release(unlink=True)
        return True

    def _unlink_shard(self, digest: str) -> None:
        """Delete a shard and its download lock file (one per digest ever fetched, else).
        Called with the hold file locked exclusively: a downloader takes its shared hold
        before the download lock, so nobody holds or waits on that lock file now."""
        for path in (self.shard_file(digest), self._lock_file(digest)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def _evict_for(self, candidates: list[Entry], excess: int) -> bool:
        """Evict unheld ``candidates`` (in order) freeing at least ``excess`` bytes, or none.

        All or nothing: shards are deleted only when enough of them are unheld, so an
        admission that cannot succeed (yet) destroys nothing.
        """
        locks: list[tuple[str, FileLock]] = []
        freed = 0
        ok = False
        try:
            for _stamp, digest, size in candidates:
                if freed >= excess:
                    break
                lock = try_exclusive(self._hold_file(digest))
                if lock is not None:  # else a live reader holds it
                    locks.append((digest, lock))
                    freed += size
            ok = freed >= excess
            if ok:
                for digest, _lock in locks:
                    self._unlink_shard(digest)
        finally:
            for _digest, lock in locks:
                lock.release(unlink=ok)
        return ok

    def used_bytes(self, dead: list[int] | None = None) -> int:
        """Bytes of cached shards plus downloads in progress (with ``dead``: those of dead
        downloaders left out, their temp files' sizes appended there)."""
        return self._scan_pending(cleanup=False, dead=dead)[0]  # (sizes, no stat per shard)

    def entries(self) -> list[CacheEntry]:
        """Every cached shard, least recently used first."""
        out = []
        for stamp, digest, size in self._scan(cleanup=False)[1]:
            held = False
            if os.path.exists(self._hold_file(digest)):
                lock = try_exclusive(self._hold_file(digest))
                held = lock is None
                if lock is not None:
                    lock.release()
            out.append(CacheEntry(digest, size, stamp, held))
        return out


def list_dir(path: str) -> list[os.DirEntry[str]]:
    """The entries of directory ``path``; none when it does not exist."""
    try:
        with os.scandir(path) as it:
            return [e for e in it]
    except FileNotFoundError:
        return []


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return 0.0
