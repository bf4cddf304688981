"""The cache's listing of ``shards/<aa>`` folders, each listed again only when it changed.

Every admission (each shard a reader downloads) adds up the bytes the cache holds. Listing
and stat-ing every cached shard each time made a pull quadratic in its shard count (QA 8:
3,000 one-row shards on moto took 47 s, 74-87% of it in that scan, under the cache lock).
A folder's entries change only by files made, renamed or deleted, which move the folder's
mtime, and a verified shard's size never changes. So a folder whose mtime is the one it had
when it was last listed is taken from that listing, provided:

- the listing held no download in progress (a temp file grows, and a stale one is cleaned up
  by a scan), and
- the folder's mtime was already older than :data:`SETTLED_NS` when it was listed, by the
  filesystem's own clock (a file of the cache touched just before listing, so a server whose
  clock runs behind this machine's cannot make a fresh change look old), and older than
  :data:`COARSE_SETTLED_NS` on a filesystem whose timestamps are whole seconds (FAT keeps
  two): a change made within the timestamp granularity of the one before could otherwise
  leave the mtime as it was (git's "racy" index entries, the same problem). Where that file
  cannot be touched (a read-only cache), nothing is kept.

A cache on NFS shared by several machines is not covered: a client may hold a folder's
attributes (its mtime) for up to a minute. Give each machine its own cache.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

__all__ = ["COARSE_SETTLED_NS", "SETTLED_NS", "FolderListings"]

SETTLED_NS = 2 * 10**8
COARSE_SETTLED_NS = 3 * 10**9


@dataclass(frozen=True)
class _Listing:
    mtime_ns: int
    shards: dict[str, int]  # digest -> bytes


class FolderListings:
    """The last clean listing of each ``shards/<aa>`` folder, by path (thread-safe)."""

    def __init__(self, clock_file: str) -> None:
        self.clock_file = clock_file  # touched to read the filesystem's time
        self._listings: dict[str, _Listing] = {}
        self._lock = threading.Lock()

    def known(self, folder: str) -> tuple[dict[str, int] | None, int]:
        """``(shards, mtime_ns)``: the folder's shards when its last listing still holds (else
        None), and its mtime now (to give to :meth:`remember` after listing it)."""
        try:
            mtime_ns = os.stat(folder).st_mtime_ns
        except FileNotFoundError:
            return {}, 0
        with self._lock:
            got = self._listings.get(folder)
        if got is not None and got.mtime_ns == mtime_ns:
            return got.shards, mtime_ns
        return None, mtime_ns

    def remember(self, folder: str, mtime_ns: int, shards: dict[str, int],
                 listed_at_ns: int | None) -> None:
        """Keep a clean listing made at ``listed_at_ns`` (:meth:`now_ns` before listing) of
        a folder whose mtime was then ``mtime_ns``; a folder changed too recently is not kept
        (module doc)."""
        settled = SETTLED_NS if (listed_at_ns or 0) % 10**9 else COARSE_SETTLED_NS
        with self._lock:
            if listed_at_ns is not None and listed_at_ns - mtime_ns > settled:
                self._listings[folder] = _Listing(mtime_ns, dict(shards))
            else:
                self._listings.pop(folder, None)

    def now_ns(self) -> int | None:
        """The filesystem's time now: the mtime of the clock file, touched (None: it cannot
        be, and no listing is kept)."""
        try:
            with open(self.clock_file, "ab"):
                pass
            os.utime(self.clock_file)
            return os.stat(self.clock_file).st_mtime_ns
        except OSError:
            return None
