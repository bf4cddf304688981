"""What pyarrow's CSV reader lets through, refused here with the file, line and fix.

- **A quoted value that never closes.** The reader takes the rest of the file as that one
  value: a 4-row file commits as 1 row. A reader counts the double quotes it passes
  (:class:`QuoteCount`, no second read); an odd count is checked by :func:`unclosed_quote_line`,
  which follows CSV's quoting rules (a quote opens a value only at its start, ``""`` inside
  one is a quote), since a quote inside an unquoted value (``5" screen``) is just a character.
- **Text that is not UTF-8.** The reader types such a column as binary: a Latin-1 file would
  be stored as bytes, and turn the same column of every other file into bytes too.
- **A header that names a column twice.** The reader keeps both columns under one name, which
  no dataset can store, and a later error could not say which file it was.
"""

from __future__ import annotations

import mmap
import os
import re
from typing import IO, Any

import pyarrow as pa

from dload_arrow.errors import SchemaError
from dload_arrow.ingest.location import is_remote
from dload_arrow.ingest.table_stream import compression, is_tsv, open_table_file, recode_hint

__all__ = ["QuoteCount", "check_quotes_closed", "refuse_bytes", "refuse_repeated_names",
           "unclosed_quote_line"]

_QUOTE = re.compile(rb'"')


class QuoteCount:
    """A binary file that counts the double quotes read through it."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self.quotes = 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.quotes += data.count(b'"')
        return data

    def __getattr__(self, name: str) -> Any:
        if name in ("readinto", "read1", "readinto1", "peek"):  # every byte goes via read()
            raise AttributeError(name)
        return getattr(self._f, name)


def unclosed_quote_line(path: str, endpoint_url: str | None = None) -> int | None:
    """The line (1-based) where a quoted value opens and never closes; None if none does.

    Only the quotes are visited (a local file is memory-mapped, not read into memory): a quote
    opens a value at the file's start or after a delimiter or line end, and inside one ``""``
    is a quote and a lone ``"`` closes it."""
    openers = (b"\t" if is_tsv(path) else b",", b"\n", b"\r")  # (a tab opens a .tsv's only)
    if is_remote(path) or compression(path):
        f, _ = open_table_file(path, endpoint_url)
        with f:
            return _unclosed(f.read(), openers)
    with open(path, "rb") as local:
        if os.fstat(local.fileno()).st_size == 0:
            return None
        with mmap.mmap(local.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _unclosed(data, openers)


def _unclosed(data: Any, openers: tuple[bytes, ...] = (b",", b"\n", b"\r")) -> int | None:
    line, counted, opened, in_quote, skip = 1, 0, 0, False, False
    for m in _QUOTE.finditer(data):
        at = m.start()
        if skip:  # the second quote of a "" inside a quoted value
            skip = False
        elif in_quote:
            if data[at + 1: at + 2] == b'"':
                skip = True
            else:
                in_quote = False
        elif at == 0 or data[at - 1: at] in openers:
            line += data[counted:at].count(b"\n")
            counted, in_quote, opened = at, True, line
    return opened if in_quote else None


def check_quotes_closed(count: QuoteCount, path: str, endpoint_url: str | None) -> None:
    """Refuse ``path`` when a quoted value in it never closes (after an odd quote count)."""
    if count.quotes % 2 == 0:
        return
    line = unclosed_quote_line(path, endpoint_url)
    if line is not None:
        raise SchemaError(
            f"{path!r}: the quoted value that opens on line {line} is never closed, so the "
            "rest of the file would be read as that one value; close the quote (a quote "
            "inside a quoted value is written twice, \"\")"
        )


def refuse_bytes(schema: pa.Schema, path: str) -> None:
    """Refuse a CSV file whose text is not UTF-8 (pyarrow reads such a column as bytes, and
    keeps such a header's bytes as they are: its names do not decode)."""
    try:
        names = schema.names
    except UnicodeDecodeError as e:
        raise SchemaError(
            f"{path!r}, line 1 is not UTF-8 text: the header holds bytes that are not UTF-8 "
            f"({e.object[max(0, e.start - 12):e.end + 12]!r}); re-encode the file as UTF-8, "
            f"e.g. `{recode_hint(path)}`, and commit that") from None
    binary = [n for n, t in zip(names, schema.types, strict=True) if pa.types.is_binary(t)
              or pa.types.is_large_binary(t)]
    if binary:
        raise SchemaError(
            f"{path!r} is not UTF-8 text: column {binary[0]!r} holds bytes that are not UTF-8 "
            f"(it would be stored as binary); re-encode the file as UTF-8, e.g. "
            f"`{recode_hint(path)}`, "
            "and commit that"
        )


def refuse_repeated_names(schema: pa.Schema, path: str) -> None:
    """Refuse a CSV file whose header (line 1) names a column more than once, or not at all
    (``id,a,b,``: a spreadsheet's trailing comma)."""
    blank = [i + 1 for i, n in enumerate(schema.names) if not n.strip()]
    if blank:
        trailing = " (a trailing comma?)" if blank[-1] == len(schema.names) else ""
        raise SchemaError(
            f"{path!r}, line 1: column {blank[0]} of the header has no name{trailing}; a "
            "column needs a name (filters, SQL and DataFrames address it by name): name it in "
            "the header, or delete the empty column")
    seen: set[str] = set()
    for name in schema.names:
        if name in seen:
            where = [i + 1 for i, n in enumerate(schema.names) if n == name]
            raise SchemaError(
                f"{path!r}, line 1: the header names column {name!r} "
                f"{len(where)} times (columns {', '.join(map(str, where))}); a table's columns "
                "need distinct names: rename the copies in the header (or delete them)"
            )
        seen.add(name)
