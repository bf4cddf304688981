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
import shlex
from typing import IO, Any

from dload_arrow.errors import IntegrityError
from dload_arrow.ingest.location import open_binary

__all__ = ["COMPRESSIONS", "UNKNOWN_SIZE", "compression", "csv_parse", "is_tsv",
           "open_table_file", "recode_hint", "without_compression"]

COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
UNKNOWN_SIZE = 1 << 50
"""The size :func:`open_table_file` gives a compressed file that is not empty."""


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
    """A decompressing stream whose decoding errors are IntegrityErrors naming the file (the
    raw file's own errors, a lost connection, pass as they are)."""

    def __init__(self, inner: Any, raw: IO[bytes], path: str, codec: str) -> None:
        super().__init__()
        self._inner, self._raw, self._path, self._codec = inner, raw, path, codec

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        import gzip
        import zlib

        import zstandard

        try:
            data = self._inner.read(len(buffer))
        except (gzip.BadGzipFile, EOFError, zlib.error, zstandard.ZstdError, _Cut) as e:
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


class _Cut(Exception):
    """The compressed input ended inside a zstd frame."""


class _Zstd:
    """zstd frames decoded one after another, and an error (``_Cut``) where the input ends
    inside one: zstandard's stream reader just stops there, which would read a cut file as a
    shorter one. Input is fed in small slices, and only until ``n`` bytes are out, so a
    highly compressible file does not decompress a whole read's worth at once."""

    _SLICE = 16 << 10

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self._raw, self._new = raw, zstandard.ZstdDecompressor().decompressobj
        self._obj, self._fed, self._out = self._new(), False, bytearray()
        self._pending, self._at = memoryview(b""), 0

    def read(self, n: int) -> bytes:
        while len(self._out) < n:
            if self._at == len(self._pending):
                self._pending, self._at = memoryview(self._raw.read(1 << 20)), 0
                if not self._pending:
                    if self._fed and not self._obj.eof:
                        raise _Cut("the data ends inside a zstd frame")
                    break
            piece = self._pending[self._at : self._at + self._SLICE]
            self._at += len(piece)
            self._feed(bytes(piece))
        data = bytes(self._out[:n])
        del self._out[:n]
        return data

    def _feed(self, piece: bytes) -> None:
        while piece:
            self._out += self._obj.decompress(piece)
            self._fed = True
            if not self._obj.eof:
                return
            piece = self._obj.unused_data  # the next frame starts here
            self._obj, self._fed = self._new(), False

    def close(self) -> None:
        self._raw.close()


def open_table_file(path: str, endpoint_url: str | None = None) -> tuple[IO[bytes], int]:
    """A binary file over the table ``path``'s bytes, decompressed, and a size for sizing reads.

    The size is the file's for an uncompressed file; for a compressed one it is 0 when the
    stream holds no bytes (an empty part), else ``UNKNOWN_SIZE``: the text may be far larger
    than the file, so a CSV's types are inferred from as large a first block as a plain
    file's.
    """
    raw, size = open_binary(path, endpoint_url=endpoint_url, block_size=4 << 20)
    codec = compression(path)
    if codec is None:
        return raw, size
    if codec == "gzip":
        import gzip

        inner: Any = gzip.GzipFile(fileobj=raw, mode="rb")
    else:
        inner = _Zstd(raw)
    stream = io.BufferedReader(_Checked(inner, raw, path, codec), 1 << 20)
    try:
        empty = not stream.peek(1)
    except BaseException:
        stream.close()
        raise
    return stream, 0 if empty else UNKNOWN_SIZE


def recode_hint(path: str) -> str:
    """A shell command that re-encodes the Latin-1 text of table ``path`` as UTF-8 (through
    its decompressor and back when it is compressed)."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    name, out = shlex.quote(base), shlex.quote(f"utf8-{base}")
    codec = compression(path)
    if codec is None:
        return f"iconv -f latin1 -t utf-8 {name} > {out}"
    return f"{codec} -dc {name} | iconv -f latin1 -t utf-8 | {codec} -c > {out}"


def is_tsv(path: str) -> bool:
    """Whether ``path`` names a tab-separated file (``.tsv``, ``.tsv.gz``)."""
    return without_compression(path).lower().endswith(".tsv")


def csv_parse(path: str, endpoint_url: str | None = None) -> Any:
    """pyarrow's CSV parse options for ``path``: a ``.tsv`` (``.tsv.gz``) is tab-separated,
    with the quoting its first MiB shows (:mod:`~dload_arrow.ingest.tsv_quoting`: by default
    none, as IANA's TSV), anything else comma-separated."""
    import pyarrow.csv as pcsv

    if is_tsv(path):
        from dload_arrow.ingest.tsv_quoting import tsv_quoting

        quoting = tsv_quoting(path, endpoint_url)
        if quoting is None:
            return pcsv.ParseOptions(delimiter="\t", quote_char=False)
        if quoting == "escape":  # pyarrow's escapes drop every backslash; R escapes quotes only
            from dload_arrow.errors import SchemaError

            raise SchemaError(
                f"{path!r} was written by R's write.table with its default qmethod='escape' "
                "(a quote inside a value as \\\"), which cannot be read without losing the "
                "values' other backslashes: write it with qmethod='double' (or quote=FALSE) "
                "and commit that")
        return pcsv.ParseOptions(delimiter="\t", quote_char='"', newlines_in_values=True)
    return pcsv.ParseOptions(delimiter=",", newlines_in_values=True)  # (quoted line breaks
    # across pyarrow's blocks: a 32 MiB table failed with "Expected 2 columns, got 1")
