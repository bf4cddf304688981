"""A write into the cache that the local disk refused: full, over quota, or a file too large.

The budget measures the free disk when it admits a shard, but another program can fill the
disk while the shard downloads. Such an error comes back from the storage layer wrapped as a
failure of the root (``downloading ... under s3://...``), which sends the user to the wrong
place: these helpers find the local error in the chain and name the cache directory instead.
A download ahead of the reader drops its shard on one (read/cache.py ``prefetch``); the
reader's own download evicts and tries again, then raises :func:`cache_disk_error`.
"""

from __future__ import annotations

import errno

from dload_arrow.errors import StorageError
from dload_arrow.sizes import format_bytes

__all__ = ["DISK_FULL_ERRNOS", "cache_disk_error", "disk_full"]

#: The errnos of a write the local disk refused for want of room (or a size limit).
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def disk_full(error: BaseException) -> OSError | None:
    """The OSError in ``error``'s chain (itself, its causes) that says the disk has no room."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
            return e
        e = e.__cause__ or e.__context__
    return None


def cache_disk_error(cache_dir: str, digest: str, nbytes: int, dataset: str | None,
                     e: OSError) -> StorageError:
    """The error for shard ``digest`` that the cache's disk could not take: where and the fix."""
    if e.errno == errno.EFBIG:
        why = (f"a file of {format_bytes(nbytes)} is larger than this process may write there "
               f"({e.strerror}: the file size limit, `ulimit -f`, or the filesystem's largest "
               "file). Raise that limit or point cache_dir (DLOAD_CACHE_DIR, --cache-dir) at "
               "another filesystem")
    else:
        full = "your disk quota there is used up" if e.errno == errno.EDQUOT else (
            "the local disk is full")
        why = (f"{full} ({e.strerror}); another program may have filled it. Free space on "
               "that disk, lower cache_budget (DLOAD_CACHE_BUDGET) so that the cache leaves "
               "more of it to others, or point cache_dir (DLOAD_CACHE_DIR, --cache-dir) at "
               "another disk")
    return StorageError(f"cannot write shard {digest[:12]} ({format_bytes(nbytes)}) of "
                        f"{dataset or 'a dataset'} into the cache {cache_dir}: {why}")
