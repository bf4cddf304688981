"""The temp file of a dead downloader (killed mid-download: nobody holds its download lock):
told apart from a download in progress (status) and removed (a scan under cache.lock)."""

from __future__ import annotations

import os

from dload_arrow.read.locks import try_exclusive

__all__ = ["dead_download", "remove_stale"]


def dead_download(lock_path: str) -> bool:
    """Whether nobody holds the download lock ``lock_path`` (creating no file: status only
    reads; a cache this user cannot write counts as downloading)."""
    if not os.path.exists(lock_path):
        return True
    try:
        lock = try_exclusive(lock_path)
    except OSError:
        return False
    if lock is not None:
        lock.release()
    return lock is not None


def remove_stale(path: str, lock_path: str) -> bool:
    """Remove temp file ``path`` if it belongs to a dead downloader (nobody holds
    ``lock_path``).

    Raises FileNotFoundError when the file is gone: its download finished (renamed to the
    final name, then released the lock) since it was listed, so it is not stale.
    """
    lock = try_exclusive(lock_path)
    if lock is None:
        return False
    try:
        os.unlink(path)
    finally:
        lock.release()
    return True
