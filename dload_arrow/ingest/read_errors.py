"""The errors for a CSV or JSON Lines file that pyarrow cannot read, with the file, line and fix.

pyarrow names neither the file nor, often, the line: a CSV row with more or fewer fields than
the header says ``Expected 2 columns, got 3: 3,4,5``, and a JSON Lines error counts rows from
the start of the 1 MiB block it was reading (``in row 24770`` on line 50,001). Only on this
error path is the file's text read again, line by line, to find the line.
"""

from __future__ import annotations

import csv
import io
import re

from dload_arrow.errors import SchemaError
from dload_arrow.ingest.location import open_binary
from dload_arrow.sizes import format_bytes

__all__ = ["CSV_INFER_BYTES", "read_error", "ragged_row"]

CSV_INFER_BYTES = 32 << 20
"""A CSV file's column types are inferred from its first block, up to this many bytes."""

_RAGGED = re.compile(r"Expected (\d+) columns, got (\d+)")


def read_error(path: str, fmt: str, e: Exception, endpoint_url: str | None = None
               ) -> SchemaError:
    """The SchemaError for pyarrow's error ``e`` reading ``path`` (a ``fmt`` file)."""
    text = f"cannot read {path!r} as {fmt}: {e}"
    if "utf8" in str(e).lower().replace("-", ""):
        return SchemaError(text + "; the file is not UTF-8 text: re-encode it as UTF-8 (e.g. "
                           "`iconv -f latin1 -t utf-8`) and commit that")
    if fmt == "csv" and _RAGGED.search(str(e)):
        found = ragged_row(path, endpoint_url)
        if found is not None:
            line, fields, columns, row = found
            return SchemaError(
                f"{path!r}, line {line}: {fields} field{'s' * (fields != 1)} where the header "
                f"has {columns} columns ({row[:80]!r}); give every row one value per column: "
                "add the missing ones (an empty one is written ,,), or quote a value holding a "
                "comma (\"a, b\")"
            )
    if fmt == "csv" and "conversion error" in str(e).lower():
        text += (
            f". Column types are inferred from the first {format_bytes(CSV_INFER_BYTES)} of a "
            "CSV file and a later value does not fit them; convert the file to Parquet with "
            "the types you want (pyarrow.parquet.write_table(pyarrow.csv.read_csv(path), "
            "'table.parquet')) and commit that"
        )
    return SchemaError(text)


def ragged_row(path: str, endpoint_url: str | None = None
               ) -> tuple[int, int, int, str] | None:
    """``(line, fields, header's columns, row text)`` of the first CSV row whose field count
    is not the header's (quoting rules as pyarrow's; empty lines skipped, as pyarrow does)."""
    f, _ = open_binary(path, endpoint_url=endpoint_url, block_size=4 << 20)
    with f:
        text = io.TextIOWrapper(f, encoding="utf-8", errors="replace", newline="")
        reader = csv.reader(text)
        columns, line = None, 1  # line: where the next row starts
        try:
            for row in reader:
                start, line = line, reader.line_num + 1
                if not row:
                    continue
                if columns is None:
                    columns = len(row)
                elif len(row) != columns:
                    return start, len(row), columns, ",".join(row)
        except csv.Error:  # a value longer than csv's field limit: no line then
            return None
    return None
