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
from dataclasses import dataclass

from dload_arrow.errors import ConfigError, InvalidNameError
from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.locks import try_exclusive
from dload_arrow.sizes import parse_size
from dload_arrow.store.names import check_digest

__all__ = ["VERIFIED_NS", "CacheEntry", "CacheSpace", "free_disk", "list_dir", "resolve_budget"]

# A verified shard's mtime. Any write to the file moves its mtime, so a cached file whose
# size and stamp match was not modified since its sha256 was checked; anything else is
# re-hashed before use (and fetched again if it does not match).
VERIFIED_NS = 946_684_800 * 10**9


def free_disk(path: str) -> int:
    """Bytes available to this user on the filesystem holding ``path`` (or its parent)."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    st = os.statvfs(p)
    return int(st.f_bavail * st.f_frsize)


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

    def _scan(self, cleanup: bool) -> tuple[int, list[tuple[float, str, int]]]:
        """Bytes used (files plus reservations) and the cached shards, least recently used first."""
        used = 0
        shards: dict[str, int] = {}
        root = os.path.join(self.dir, "shards")
        for sub in list_dir(root):
            if not sub.is_dir():
                continue
            for e in list_dir(sub.path):
                name = e.name
                if name.endswith(".parquet"):
                    with contextlib.suppress(FileNotFoundError):
                        shards[name[: -len(".parquet")]] = e.stat().st_size
                elif ".parquet.tmp-" in name:
                    digest, rest = name.split(".parquet.tmp-", 1)
                    try:
                        size = e.stat().st_size
                        if cleanup and self._remove_stale_tmp(e.path, digest):
                            continue
                    except FileNotFoundError:
                        # Renamed to its final name after the listing was taken (downloads
                        # finish outside cache.lock, and release their download lock right
                        # after): count the shard it became, once.
                        if digest not in shards:
                            with contextlib.suppress(FileNotFoundError, InvalidNameError):
                                shards[digest] = os.stat(self.shard_file(digest)).st_size
                        continue
                    try:
                        reserved = int(rest.split("-", 1)[0])
                    except ValueError:
                        reserved = size
                    used += max(size, reserved)
        used += sum(shards.values())
        entries = sorted((_mtime(self._hold_file(d)), d, n) for d, n in shards.items())
        return used, entries

    def _remove_stale_tmp(self, path: str, digest: str) -> bool:
        """Remove ``path`` if it belongs to a dead downloader (nobody holds its download lock).

        Raises FileNotFoundError when the file is gone: its download finished (renamed to the
        final name, then released the lock) since it was listed, so it is not stale.
        """
        lock = try_exclusive(self._lock_file(digest))
        if lock is None:
            return False
        try:
            os.unlink(path)
        finally:
            lock.release()
        return True

    def _evict(self, digest: str) -> bool:
        lock = try_exclusive(self._hold_file(digest))
        if lock is None:
            return False  # a live reader holds it
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.shard_file(digest))
        finally:
            lock.release(unlink=True)
        return True

    def used_bytes(self) -> int:
        """Bytes of cached shards plus downloads in progress."""
        return self._scan(cleanup=False)[0]

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
