"""Page CRCs of a local root's shards, checked until this machine has read each one whole.

A local root is read in place and never hashed, so a flipped byte that still decodes was
handed out as data (QA accept57a). Its shards carry Parquet page CRCs; checking them costs the
decoding threads 20-25% (bench/notes/speed-work.md, thirtieth session). So a reader checks a
shard's pages until every row group of it has passed (all columns read), then leaves a marker
in the cache directory, ``verified/<aa>/<digest>``, holding the file's size, mtime, ctime,
inode and device as they were when its check began (and still are; the stamps of up to four
files, for roots sharing a cache dir and a shard): later reads of that same file skip the
check. A file replaced or rewritten since (another ctime or inode, which even ``cp -p``
changes) is checked again; bit rot in place after the marker is what ``dload verify`` (a full
re-hash) is for: it leaves the same marker for each local shard whose bytes hash to their
digest, so that the reads after it skip the check from their first epoch, and removes the
marker of one that does not. A marker that cannot be written costs only speed.
"""

from __future__ import annotations

import contextlib
import os
import uuid

__all__ = ["LocalChecks", "file_stamp", "mark_verified", "unmark"]

_STAMPS = 4  # files (of roots sharing this cache dir) a marker vouches for at once


class LocalChecks:
    """One reader's view of which local shards still need their pages checked.

    Args:
        cache_dir: this machine's cache directory (markers go under ``verified/``).
        whole: whether the reader decodes every column (a projection leaves pages unchecked,
            so it never marks a shard).
    """

    def __init__(self, cache_dir: str, whole: bool) -> None:
        self._dir = os.path.join(cache_dir, "verified")
        self._whole = whole
        # digest -> the file's path and stamp when its check began, its row groups, and
        # those checked: marked only if the file is the same one at the end (QA review57)
        self._open: dict[str, tuple[str, str, int, set[int]]] = {}

    def check(self, path: str, digest: str, row_groups: int) -> bool:
        """Whether to check the pages of the shard file at ``path`` (read from now on)."""
        stamp = file_stamp(path)
        if digest in self._open:
            if self._open[digest][1] != stamp:  # another file since: its checks start over
                self._open[digest] = (path, stamp or "", row_groups, set())
            return True
        try:
            with open(self._marker(digest), encoding="ascii") as f:
                if stamp is not None and stamp in f.read().split("\n"):
                    return False
        except (OSError, ValueError):
            pass
        if stamp is not None:
            self._open[digest] = (path, stamp, row_groups, set())
        return True

    def passed(self, digest: str, rg: int) -> None:
        """Row group ``rg`` of ``digest`` decoded with its pages checked; once all have, the
        shard is marked (if this reader read every column)."""
        got = self._open.get(digest)
        if got is None:
            return
        got[3].add(rg)
        if len(got[3]) == got[2] and self._whole:
            del self._open[digest]
            self._mark(got[0], got[1], digest)

    def _marker(self, digest: str) -> str:
        return _marker(self._dir, digest)

    def _mark(self, path: str, stamp: str, digest: str) -> None:
        _write(self._dir, path, stamp, digest)


def mark_verified(cache_dir: str, path: str, digest: str, stamp: str) -> None:
    """Mark the local shard file at ``path`` as checked: its bytes hashed to ``digest`` (read
    whole by ``dload verify``), ``stamp`` being :func:`file_stamp` taken before the read."""
    _write(os.path.join(cache_dir, "verified"), path, stamp, digest)


def unmark(cache_dir: str, digest: str) -> None:
    """Forget that shard ``digest`` was checked (its local bytes no longer hash to it)."""
    with contextlib.suppress(OSError):
        os.unlink(_marker(os.path.join(cache_dir, "verified"), digest))


def _marker(root: str, digest: str) -> str:
    return os.path.join(root, digest[:2], digest)


def _write(root: str, path: str, stamp: str, digest: str) -> None:
    if file_stamp(path) != stamp:  # replaced or rewritten while it was read: not this one
        return
    target = _marker(root, digest)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    try:  # the stamps of the last few files found sound: roots sharing a cache dir may hold
        with open(target, encoding="ascii") as f:  # the same shard (QA review58)
            kept = [s for s in f.read().split("\n") if s and s != stamp][-(_STAMPS - 1):]
    except (OSError, ValueError):
        kept = []
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "w", encoding="ascii") as f:
            f.write("\n".join([*kept, stamp]))
        os.replace(tmp, target)
    except OSError:  # a read-only or full cache: the next read checks again
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def file_stamp(path: str) -> str | None:
    """What identifies the file's bytes short of hashing them (None: it cannot be stat'ed):
    the change time too, which a copy keeping the old mtime (``cp -p``) cannot set back."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino} {st.st_dev}"
