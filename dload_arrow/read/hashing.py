"""sha256 of a file while another thread is still writing it.

A download writes a shard's temp file front to back. Hashing it afterwards costs a second pass
over every byte (0.1 s per 128 MiB here) between "downloaded" and "usable". A
:class:`FollowingHash` reads the file in a thread of its own as it grows (``hashlib`` releases
the GIL), so when the download returns only its last bytes are left to hash.
"""

from __future__ import annotations

import hashlib
import os
import threading

__all__ = ["FollowingHash", "sha256_file"]

_CHUNK = 4 * 2**20
_POLL = 0.002


def sha256_file(path: str) -> str:
    """The hex sha256 of a complete file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


class FollowingHash:
    """Hash ``path`` as it is written; :meth:`finish` once the writer is done gives the digest.

    Use as a context manager around the write; leaving it early (an exception) stops the
    thread. Anything unexpected (the file replaced or shrunk) falls back to hashing it whole.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._h = hashlib.sha256()
        self._hashed = 0
        self._done = threading.Event()
        self._stop = threading.Event()
        self._failed = False
        self._thread = threading.Thread(target=self._run, name="dload-hash", daemon=True)

    def __enter__(self) -> FollowingHash:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            with open(self.path, "rb") as f:
                while not self._stop.is_set():
                    finished = self._done.is_set()  # read before the read below
                    chunk = f.read(_CHUNK)
                    if chunk:
                        self._h.update(chunk)
                        self._hashed += len(chunk)
                    elif finished:
                        return  # the writer was done before this empty read
                    else:
                        self._done.wait(_POLL)
        except BaseException:
            self._failed = True

    def finish(self) -> str:
        """The writer is done: hash what is left and return the hex digest."""
        self._done.set()
        self._thread.join()
        if self._failed or self._stop.is_set() or os.path.getsize(self.path) != self._hashed:
            return sha256_file(self.path)
        return self._h.hexdigest()
