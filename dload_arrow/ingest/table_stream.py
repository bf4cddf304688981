"""Open a table file for reading, decompressing a gzip or zstd one (``part-0.csv.gz``).

CSV and JSON Lines files are read front to back, so a compressed one streams through a
decompressor: Spark and most exporters write ``.csv.gz``/``.json.gz`` parts, and asking users
to decompress every part first costs them the disk the compression saved. Parquet compresses
inside the file and needs seeks, so a ``.parquet.gz`` is refused where it is detected.

A damaged stream (a truncated download, a bad byte) is an IntegrityError naming the file, not
the decompressor's own exception from inside pyarrow's reader.
"""

from __future__ import annotations

import io
from typing import IO, Any

from dload_arrow.errors import IntegrityError
from dload_arrow.ingest.location import open_binary

__all__ = ["COMPRESSIONS", "compression", "open_table_file", "without_compression"]

COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}


def compression(path: str) -> str | None:
    """``"gzip"`` or ``"zstd"`` by ``path``'s extension, else None."""
    lower = path.lower()
    return next((c for ext, c in COMPRESSIONS.items() if lower.endswith(ext)), None)


def without_compression(path: str) -> str:
    """``path`` without a compression extension (``x.csv.gz`` -> ``x.csv``)."""
    lower = path.lower()
    ext = next((e for e in COMPRESSIONS if lower.endswith(e)), "")
    return path[: len(path) - len(ext)]


class _Checked(io.RawIOBase):
    """A decompressing stream whose decoding errors are IntegrityErrors naming the file."""

    def __init__(self, inner: Any, raw: IO[bytes], path: str, codec: str) -> None:
        super().__init__()
        self._inner, self._raw, self._path, self._codec = inner, raw, path, codec

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        import zlib

        import zstandard

        try:
            data = self._inner.read(len(buffer))
        except (OSError, EOFError, zlib.error, zstandard.ZstdError) as e:
            raise IntegrityError(
                f"{self._path}: its {self._codec} stream is damaged or cut short ({e}); "
                f"re-download or re-export the file (`{_TEST[self._codec]} "
                f"{self._path.rsplit('/', 1)[-1]}` checks it)") from None
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
            self._raw.close()
        super().close()


_TEST = {"gzip": "gzip -t", "zstd": "zstd -t"}


def open_table_file(path: str, endpoint_url: str | None = None) -> tuple[IO[bytes], int]:
    """A binary file over the table ``path``'s bytes, decompressed, and a size for sizing reads.

    The size is the file's for an uncompressed file; for a compressed one it is 0 when the
    stream holds no bytes (an empty part) and an estimate (8x the compressed size) otherwise.
    """
    raw, size = open_binary(path, endpoint_url=endpoint_url, block_size=4 << 20)
    codec = compression(path)
    if codec is None:
        return raw, size
    if codec == "gzip":
        import gzip

        inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")
    else:
        import zstandard

        inner = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    stream = io.BufferedReader(_Checked(inner, raw, path, codec), 1 << 20)
    try:
        empty = not stream.peek(1)
    except BaseException:
        stream.close()
        raise
    return stream, 0 if empty else max(1, size) * 8
