"""The errors of failed writes under a local root: what, where, why and the fix."""

from __future__ import annotations

import errno

from dload_arrow.errors import StorageError

__all__ = ["write_error"]


def write_error(root: str, what: str, e: OSError) -> StorageError:
    """The error for a failed write under the root: what, where, why and the fix."""
    if e.errno == errno.EFBIG:  # (not a full disk: QA etl63)
        return StorageError(
            f"cannot write {what} in root {root}: the file is larger than this "
            f"process may write there ({e.strerror}: the file size limit, `ulimit -f`, or "
            "the filesystem's largest file); raise that limit, commit with a smaller "
            "shard_size (--shard-size), or point the root at another filesystem, then "
            "run the command again")
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageError(
            f"cannot write {what} in root {root}: no room on its disk "
            f"({e.strerror}); free space there (`dload gc` removes unreferenced shards) "
            "or point the root at a bigger disk, then run the command again"
        )
    if e.errno in (errno.EISDIR, errno.ENOTEMPTY):  # (made by hand, QA review66b)
        return StorageError(
            f"cannot create {what} in root {root}: a directory is in its place, which "
            "no dload object is; look inside and remove it yourself (`rm -r`)")
    return StorageError(
        f"cannot create {what} in root {root} ({e.strerror}); writing needs write "
        "permission on the root's folders (`ls -ld` shows their owner and mode): run as a "
        "user who has it, or point the root at a directory you can write")
