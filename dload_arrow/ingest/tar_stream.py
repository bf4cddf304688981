"""The byte stream under a tar: decoding errors, the tail tarfile has read, and checks of
what a compressed stream holds (a tar header; zstd frames written with checksums)."""

from __future__ import annotations

import tarfile
import zlib
from typing import IO

__all__ = ["BLOCK", "Tail", "drains", "errors", "is_header", "zstd_unchecked"]

BLOCK = 8 << 20
# Skippable frames (magic 0x184D2A50-0x184D2A5F, then a 4-byte length): pzstd and seekable
# zstd writers put one before the data frames.
_SKIPPABLE = 0x184D2A50


def errors() -> tuple[type[BaseException], ...]:
    import zstandard

    return (tarfile.TarError, zlib.error, EOFError, OSError, zstandard.ZstdError)


def is_header(block: bytes) -> bool:
    """Whether ``block`` is a tar header (its checksum matches)."""
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def drains(stream: IO[bytes] | Tail) -> bool:
    """Whether the rest of a decompressing stream decodes to its end (checksums pass)."""
    try:
        while stream.read(BLOCK):
            pass
    except errors():
        return False
    return True


class Tail:
    """A reader that remembers the last bytes it returned, to inspect the end-of-archive
    block after tarfile has consumed it."""

    _KEEP = 64 * 1024

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.pos = 0
        self.buf = b""

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.pos += len(data)
        self.buf = (self.buf + data)[-self._KEEP :]
        return data

    def block(self, offset: int) -> bytes | None:
        start = offset - (self.pos - len(self.buf))
        if start < 0:
            return None
        return self.buf[start : start + tarfile.BLOCKSIZE]

    def data_after(self, offset: int) -> tuple[int, bytes] | None:
        """The offset of the first non-zero byte at or after ``offset`` (held in ``buf``) to
        the end of the stream, with the bytes from its block on; None when only zeros follow
        (read to the end, so a compressed stream's checksum is checked there)."""
        base = self.pos - len(self.buf)
        seen = self.buf[max(offset - base, 0) :]
        base = self.pos - len(seen)
        while True:
            data = seen.lstrip(b"\0")
            if data:
                at = base + len(seen) - len(data)
                skip = (at - offset) % tarfile.BLOCKSIZE  # from the block it lies in
                return at, seen[len(seen) - len(data) - skip :] + self.read(tarfile.BLOCKSIZE)
            base, seen = self.pos, self.read(BLOCK)
            if not seen:
                return None


def zstd_unchecked(head: bytes) -> bool:
    """Whether the first zstd frame in ``head`` (after skippable frames) has no checksum;
    False when ``head`` holds no readable frame header (decompressing will say why)."""
    import zstandard

    pos = 0
    while len(head) >= pos + 8 and \
            int.from_bytes(head[pos : pos + 4], "little") & ~0xF == _SKIPPABLE:
        pos += 8 + int.from_bytes(head[pos + 4 : pos + 8], "little")
    try:
        return not zstandard.get_frame_parameters(head[pos : pos + 18]).has_checksum
    except zstandard.ZstdError:
        return False
