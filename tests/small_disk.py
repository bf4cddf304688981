"""A small disk without mounting one: ``os.statvfs`` answers for a folder as if it were a disk
of a given capacity holding only that folder's files (the OS's answer is faked, not our
storage layer)."""

from __future__ import annotations

import contextlib
import os


def du(path: str) -> int:
    """Bytes of the files under ``path`` (one a download or eviction removes mid-walk: 0)."""
    total = 0
    for d, _, fs in os.walk(path):
        for f in fs:
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(os.path.join(d, f))
    return total


class SmallDisk:
    """os.statvfs for a disk of ``capacity`` bytes that holds only the files under ``folder``:
    a full disk without mounting one (the OS's answer is faked, not our storage layer)."""

    def __init__(self, folder: str, capacity: int) -> None:
        self.folder, self.capacity, self.real = folder, capacity, os.statvfs
        self.peak = 0

    def __call__(self, path: str | os.PathLike[str]) -> os.statvfs_result:
        if not os.path.abspath(os.fspath(path)).startswith(self.folder):
            return self.real(path)
        used = du(self.folder)
        self.peak = max(self.peak, used)
        free = max(0, self.capacity - used) // 512
        st = list(self.real(path))
        st[0] = st[1] = 512  # f_bsize, f_frsize
        st[2], st[3], st[4] = self.capacity // 512, free, free  # f_blocks, f_bfree, f_bavail
        return os.statvfs_result(st)
