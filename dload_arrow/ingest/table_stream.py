"""Open a table file for reading, decompressing a gzip or zstd one (``part-0.csv.gz``).

CSV and JSON Lines files are read front to back, so a compressed one streams through a
decompressor: Spark and most exporters write ``.csv.gz``/``.json.gz`` parts, and asking users
to decompress every part first costs them the disk the compression saved. Parquet compresses
inside the file and needs seeks, so a ``.parquet.gz`` is refused where it is detected.

A damaged stream (a truncated download, a bad byte) is an IntegrityError naming the file, not
the decompressor's own exception from inside pyarrow's reader.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
from typing import IO, Any

from dload_arrow.errors import IntegrityError
from dload_arrow.ingest.location import is_remote, local_path, open_binary

__all__ = ["COMPRESSIONS", "UNKNOWN_SIZE", "compression", "csv_parse", "is_tsv",
           "open_table_file", "recode_hint", "tsv_quoted", "without_compression"]

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
    without quoting (IANA's TSV: NLP files hold unbalanced quotes, which CSV quoting dropped or
    let swallow the rest of the file: QA review59b) unless its first MiB shows CSV-style
    quoting (R's quoted header; pandas' quoted values holding tabs or line breaks), anything
    else comma-separated."""
    import pyarrow.csv as pcsv

    if is_tsv(path):  # quoted as R writes it: "" or \" inside a value
        if tsv_quoted(path, endpoint_url):
            return pcsv.ParseOptions(delimiter="\t", quote_char='"', double_quote=True,
                                     escape_char="\\")
        return pcsv.ParseOptions(delimiter="\t", quote_char=False)
    return pcsv.ParseOptions(delimiter=",")


_QUOTE_CACHE: dict[tuple[Any, ...], bool] = {}


def tsv_quoted(path: str, endpoint_url: str | None = None) -> bool:
    """Whether a .tsv quotes as CSV does, by its first MiB: every header name quoted (R's
    ``write.table``), or a value quoted because it holds a doubled quote or, on one line, a
    tab (pandas' ``to_csv(sep="\\t")``). A line at a time, so linear (QA review59d: a regex
    took 19 s on 126 KB), and a lone ``"`` token (CoNLL files) is no evidence. Kept per file
    and its size and time (a rewritten file is looked at again)."""
    key: tuple[Any, ...] = (path, endpoint_url)
    if not is_remote(path):
        with contextlib.suppress(OSError):
            st = os.stat(local_path(path))
            key += (st.st_size, st.st_mtime_ns)
    if key not in _QUOTE_CACHE:
        f, _ = open_table_file(path, endpoint_url)
        with f:
            head = f.read(1 << 20)
        if len(_QUOTE_CACHE) > 256:
            _QUOTE_CACHE.clear()
        _QUOTE_CACHE[key] = _quoted_lines(head.split(b"\n"))
    return _QUOTE_CACHE[key]


def _quoted_lines(lines: list[bytes]) -> bool:
    if lines:
        lines[0] = lines[0].removeprefix(b"\xef\xbb\xbf")  # (a BOM before R's header)
    rows = [line.rstrip(b"\r").split(b"\t") for line in lines]
    names = rows[0] if rows else []
    if names and all(_whole(n) for n in names) and all(  # R's: its body quoted alike
            _whole(f) or b'"' not in f for row in rows[1:-1] for f in row):
        return True
    open_at_end = False  # a quoted value holding a line break, opened on the line before
    for row in rows[1:]:
        if open_at_end and row[0][-1:] == b'"' and _clean(row[0][:-1]):
            return True
        open_at_end = False
        for f in row:  # one pass: linear in the line (QA review59e)
            if _whole(f) and b'""' in f[1:-1]:
                return True  # "say ""hi"""
            if open_at_end and f[-1:] == b'"' and _clean(f[:-1]):
                return True  # "tab<TAB>here"
            if len(f) >= 2 and f[:1] == b'"' and f[-1:] != b'"' and _clean(f[1:]):
                open_at_end = True
            elif b'"' in f:
                open_at_end = False
    return False


def _clean(text: bytes) -> bool:
    """No quote in ``text`` but doubled or backslash-escaped ones (R writes ``\\"``)."""
    return b'"' not in text.replace(b'""', b"").replace(b'\\"', b"")


def _whole(field: bytes) -> bool:
    """A field quoted from its first byte to its last, its inner quotes doubled."""
    return len(field) >= 2 and field[:1] == field[-1:] == b'"' and _clean(field[1:-1])
