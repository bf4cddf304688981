"""This process's own holds on a cache's shards, and the parked ones among them.

A reader lets its shards go as it moves on; a dataset's ``to_polars()`` frame holds its files
until the user drops the dataset (or view). Those holds are *parked* (``FileLock.park``): a
read of the same process that needs their room cannot get it by waiting, since the user who
would drop them waits for that read. In a notebook the read waited the whole
``DLOAD_CACHE_WAIT`` (600 s) and then gave up (QA nb58); it is refused at once instead, and
a plan counts the parked bytes as taken when it sizes its window.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection

from dload_arrow.errors import InfeasiblePlanError
from dload_arrow.read.cache_space import CacheSpace
from dload_arrow.read.locks import held_here, parked_paths
from dload_arrow.sizes import BUDGET_WAYS, format_bytes, format_bytes_up

__all__ = ["DROP_FRAMES", "here_text", "parked_bytes", "parked_refusal", "parked_shards"]

#: How to free what parked holds keep.
DROP_FRAMES = ("drop the datasets or views whose to_polars() frames hold them (del them, or "
               "re-run the cell without keeping them)")


def parked_shards(cache: CacheSpace) -> dict[str, int]:
    """The shards of ``cache`` that this process's parked holds keep: digest -> bytes. No file
    is touched when nothing is parked. Paths compare resolved: one cache named through a
    symlink is the same cache (QA review59)."""
    parked = parked_paths()
    if not parked:
        return {}
    folder = os.path.realpath(os.path.join(cache.dir, "holds")) + os.sep
    out: dict[str, int] = {}
    for path in parked:
        digest = os.path.basename(path)
        if not os.path.realpath(path).startswith(folder):
            continue
        with contextlib.suppress(OSError, ValueError):  # gone meanwhile; not a shard's name
            out[digest] = os.path.getsize(cache.shard_file(digest))
    return out


def parked_bytes(cache: CacheSpace, exclude: Collection[str] = ()) -> int:
    """Bytes of the shards of ``cache`` that this process's parked holds keep, but those in
    ``exclude`` (digests)."""
    return sum(n for d, n in parked_shards(cache).items() if d not in exclude)


def parked_refusal(cache_dir: str, what: str, needs: int, parked: int,
                   limit: int) -> InfeasiblePlanError:
    """The error for a read that needs ``needs`` bytes of room where this process's parked
    holds keep ``parked`` of the ``limit``."""
    return InfeasiblePlanError(
        f"no room in the cache {cache_dir} for {what} ({format_bytes_up(needs)}): this "
        f"process's to_polars() frames hold {format_bytes(parked)} of the "
        f"{format_bytes(limit)} it may hold, and the read cannot wait for them to be dropped. "
        f"{DROP_FRAMES[0].upper()}{DROP_FRAMES[1:]}, or raise the budget to at least "
        f"{format_bytes_up(needs + parked)} ({BUDGET_WAYS})"
    )


def here_text(cache: CacheSpace) -> str:
    """How much of the held room this process holds itself (its own readers cannot
    release it while it waits here, unless another thread of it is streaming)."""
    own = sum(e.bytes for e in cache.entries() if e.held and held_here(cache._hold_file(
        e.digest)))
    return (f" ({format_bytes(own)} of them by this process: its to_polars() frames and "
            "paused iterators hold their shards until dropped)") if own else ""
