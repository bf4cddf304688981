"""``FrameCheck``: a pass-through reader that follows a zstd stream's frame structure.

The zstd decoder (python-zstandard's ``stream_reader``) ends quietly when its input stops
inside a frame: cut in the 4-byte checksum, every byte of the content is there and the
checksum is never compared, so a byte changed in transit would be committed as it is. This
reader sits between the file and the decoder, walks the frames' headers and block headers as
their bytes pass (no copy, no decoding) and, at the end of the file, raises
:class:`ZstdTruncated` unless the file ended exactly at the end of a frame (the tar reader
names the entry it was in and says what to do).

Format: RFC 8878, section 3.1 (frames, skippable frames, block headers).
"""

from __future__ import annotations

from typing import IO

__all__ = ["FrameCheck", "ZstdTruncated"]

_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50  # 0x184D2A50-0x184D2A5F
_FCS = (0, 2, 4, 8)  # Frame_Content_Size bytes by its flag (0: 1 byte when single segment)
_DID = (0, 1, 2, 4)  # Dictionary_ID bytes by its flag


class ZstdTruncated(EOFError):
    """A zstd file ended inside a frame, after ``pos`` compressed bytes (``skippable``: a
    metadata frame, such as a seekable archive's seek table, not one of data)."""

    def __init__(self, pos: int, skippable: bool = False) -> None:
        super().__init__(f"after {pos:,} compressed bytes")
        self.pos = pos
        self.skippable = skippable


class FrameCheck:
    """Read ``raw`` unchanged; raise at its end unless it ended between zstd frames.

    Structure it cannot parse (a reserved block type, a
    bad magic number) is left to the decoder, which says why in its own words."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.pos = 0  # compressed bytes read
        self._want = 4  # header bytes the current step needs
        self._head = b""  # header bytes gathered for the current step
        self._skip = 0  # content bytes to pass before the next header
        self._step = self._magic
        self._checksum = False  # the current frame ends with a 4-byte checksum
        self._lost = False  # structure not understood: the decoder will fail on it
        self._in_skippable = False  # the bytes passing are a skippable frame's

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        if data:
            if not self._lost:
                self._scan(memoryview(data))
            self.pos += len(data)
        elif n != 0:
            self._ended()
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()

    def _ended(self) -> None:
        between = self._step == self._magic and not self._head and not self._skip
        if self._lost or between:
            return
        # in a skippable frame: its length, or its payload (the next step is a magic number)
        skippable = self._in_skippable and (
            self._step == self._skippable or (self._step == self._magic and self._skip > 0))
        raise ZstdTruncated(self.pos, skippable=skippable)

    def _scan(self, data: memoryview) -> None:
        i, n = 0, len(data)
        while i < n:
            if self._skip:
                take = min(self._skip, n - i)
                self._skip -= take
                i += take
                continue
            take = min(self._want - len(self._head), n - i)
            self._head += bytes(data[i : i + take])
            i += take
            if len(self._head) == self._want:
                head, self._head = self._head, b""
                self._step(head)
                if self._lost:
                    return

    def _magic(self, head: bytes) -> None:
        magic = int.from_bytes(head, "little")
        self._in_skippable = magic & ~0xF == _SKIPPABLE
        if magic == _MAGIC:
            self._want, self._step = 1, self._descriptor
        elif self._in_skippable:
            self._want, self._step = 4, self._skippable
        else:
            self._lost = True

    def _skippable(self, head: bytes) -> None:
        self._skip = int.from_bytes(head, "little")
        self._want, self._step = 4, self._magic

    def _descriptor(self, head: bytes) -> None:
        d = head[0]
        single = bool(d & 0x20)
        self._checksum = bool(d & 0x04)
        fcs = _FCS[d >> 6] or (1 if single else 0)
        rest = (0 if single else 1) + _DID[d & 0x03] + fcs
        self._skip = rest
        self._want, self._step = 3, self._block

    def _block(self, head: bytes) -> None:
        h = int.from_bytes(head, "little")
        last, kind, size = h & 1, (h >> 1) & 3, h >> 3
        if kind == 3:  # reserved: corrupt, the decoder says so
            self._lost = True
            return
        self._skip = 1 if kind == 1 else size  # an RLE block stores its byte once
        if not last:
            return
        self._skip += 4 if self._checksum else 0
        self._want, self._step = 4, self._magic
