"""The errors for a CSV or JSON Lines file that pyarrow cannot read, with the file, line and fix.

pyarrow names neither the file nor, often, the line: a CSV row with more or fewer fields than
the header says ``Expected 2 columns, got 3: 3,4,5``, and a JSON Lines error counts rows from
the start of the 1 MiB block it was reading (``in row 24770`` on line 50,001). Only on this
error path is the file's text read again, line by line, to find the line.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import shlex
from collections.abc import Iterator
from typing import Any

from dload_arrow.errors import SchemaError
from dload_arrow.ingest.table_stream import (
    is_tsv,
    open_table_file,
    recode_hint,
    without_compression,
)
from dload_arrow.ingest.table_text import values_at
from dload_arrow.sizes import format_bytes

__all__ = ["CSV_INFER_BYTES", "bad_json_line", "csv_options", "delimiter_fix",
           "other_delimiter", "ragged_row", "read_error"]

CSV_INFER_BYTES = 32 << 20
"""A CSV file's column types are inferred from its first block, up to this many bytes."""

_RAGGED = re.compile(r"Expected (\d+) columns, got (\d+)")
_IN_ROW = re.compile(r"\.? in row \d+$")  # pyarrow's row count, from the block's start
_FIX_LINE = "fix the line (it holds one JSON object, or several) or remove it"
_FIX_BIG = ("write the number as a string (\"1e400\") to keep it as text, or remove the "
            "line")
_NOT_UTF8 = "not UTF-8 text"
_CHANGED = re.compile(r"Column\((.*)\) changed from (\w+) to (\w+)")



def csv_options(size: int) -> Any:
    """pyarrow's CSV read options for a file of ``size`` bytes: types are inferred from the
    first block, so it is the whole file when that is not huge."""
    import pyarrow.csv as pcsv

    return pcsv.ReadOptions(block_size=max(1 << 20, min(size + 1, CSV_INFER_BYTES)))

def read_error(path: str, fmt: str, e: Exception, endpoint_url: str | None = None
               ) -> SchemaError:
    """The SchemaError for pyarrow's error ``e`` reading ``path`` (a ``fmt`` file)."""
    text = f"cannot read {path!r} as {fmt}: {e}"
    if fmt == "jsonl":
        bad = bad_json_line(path, str(e), endpoint_url)
        if bad is not None:
            line, why, row, fix = bad
            if why == _NOT_UTF8:  # pyarrow's own words add nothing (chunks, string indices)
                return SchemaError(f"{path!r}, line {line} is {why} ({row[:80]!r}); {fix}")
            return SchemaError(f"{path!r}, line {line}: {_IN_ROW.sub('', str(e))} ({why}: "
                               f"{row[:80]!r}); {fix}")
    if "utf8" in str(e).lower().replace("-", ""):
        return SchemaError(text + "; the file is not UTF-8 text: re-encode it as UTF-8 (e.g. "
                           f"`{recode_hint(path)}`) and commit that")
    if fmt == "csv" and _utf16(path, endpoint_url):  # (QA review59e: Excel's Unicode Text)
        name = os.path.basename(without_compression(path))
        return SchemaError(f"{path!r} is UTF-16 text (Excel's \"Unicode Text\"), which dload "
                           f"does not read: re-encode it as UTF-8 (`iconv -f UTF-16 -t UTF-8 "
                           f"{shlex.quote(name)} > utf8-{name}`) and commit that")
    if fmt == "csv" and _RAGGED.search(str(e)):
        found = ragged_row(path, endpoint_url)
        if found is not None:
            line, fields, columns, row, head = found
            other = other_delimiter(head, path) if columns == 1 else None
            if other is None and fields == columns + 1 and line == 2 and _row_names(
                    path, endpoint_url, columns):  # (a ';' file first: QA review59h)
                return SchemaError(
                    f"{path!r}, line 2: {fields} fields where the header has {columns} "
                    f"columns ({row[:80]!r}): R's write.table writes its row names so, with "
                    "no name for them in the header; write the file with row.names=FALSE, or "
                    "name that first column in the header")
            fix = delimiter_fix(other, "the", path) if other is not None else (
                _tsv_fix(_quoted(path, endpoint_url))
                if is_tsv(path) else "give every row one value per column: add the missing "
                "ones (an empty one is written ,,), or quote a value holding a comma (\"a, b\")")
            return SchemaError(
                f"{path!r}, line {line}: {fields} field{'s' * (fields != 1)} where the header "
                f"has {columns} columns ({row[:80]!r}); {fix}")
    if fmt == "csv" and "conversion error" in str(e).lower():
        text += (
            f". Column types are inferred from the first {format_bytes(CSV_INFER_BYTES)} of a "
            "CSV file and a later value does not fit them; convert the file to Parquet with "
            "the types you want (pyarrow.parquet.write_table(pyarrow.csv.read_csv(path), "
            "'table.parquet')) and commit that"
        )
    return SchemaError(text)


def other_delimiter(header: str, path: str = "") -> str | None:
    """The delimiter a one-column header holds instead of the file's own (a CSV's commas: ``;``,
    a tab, ``|``; a ``.tsv``'s tabs: ``,``, ``;``, ``|``)."""
    others = (",", ";", "|") if is_tsv(path) else (";", "\t", "|")
    return next((d for d in others if d in header), None)


def delimiter_fix(d: str, whose: str = "the", path: str = "") -> str:
    """What to do with a file written with the delimiter ``d`` (QA eng58)."""
    if is_tsv(path):
        fix = ("name the file .csv, which dload reads as comma-separated" if d == "," else
               "write it with tabs")
        return f"{whose} header holds no tab but {d!r}: a .tsv is read with tabs; {fix}"
    if d == "\t":  # a .tsv is read with tabs
        return (f"{whose} header holds no comma but tabs: name the file .tsv (.tsv.gz), which "
                "dload reads as tab-separated, and commit that")
    return (f"{whose} header holds no comma but {d!r}: dload reads comma-separated files (and "
            "tab-separated .tsv files); write it with commas, or as Parquet "
            "(pyarrow.csv.read_csv(path, parse_options="
            f"pyarrow.csv.ParseOptions(delimiter={d!r})), then pyarrow.parquet.write_table), "
            "and commit that")


def ragged_row(path: str, endpoint_url: str | None = None
               ) -> tuple[int, int, int, str, str] | None:
    """``(line, fields, header's columns, row text, header text)`` of the first CSV row whose
    field count is not the header's (quoting rules as pyarrow's; empty lines skipped, as
    pyarrow does)."""
    f, _ = open_table_file(path, endpoint_url)
    with f:
        reader, sep = _reader(f, path, endpoint_url)
        columns, line, head = None, 1, ""  # line: where the next row starts
        try:
            for row in reader:
                start, line = line, reader.line_num + 1
                if not row:
                    continue
                if columns is None:
                    columns, head = len(row), sep.join(row)
                elif len(row) != columns:
                    return start, len(row), columns, sep.join(row), head
        except csv.Error:  # a value longer than csv's field limit: no line then
            return None
    return None


def bad_json_line(path: str, message: str, endpoint_url: str | None = None
                  ) -> tuple[int, str, str, str] | None:
    """``(line, why, line text, fix)`` of the first line of the JSON Lines file ``path`` that is
    not UTF-8 or JSON objects, holds a number beyond float64 or a key twice, or (as pyarrow's
    ``message`` says ``Column(/a/b) changed from number to string``) gives a field another
    kind of value than an earlier line."""
    changed = _CHANGED.search(message)
    steps = [s for s in changed.group(1).split("/") if s] if changed else None
    seen: set[str] = set()
    f, _ = open_table_file(path, endpoint_url)
    with f:
        for n, raw in enumerate(f, 1):
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            try:
                rows = list(_objects(raw.decode("utf-8")))
            except UnicodeDecodeError:
                return n, _NOT_UTF8, text, (f"re-encode the file as UTF-8 (e.g. "
                                            f"`{recode_hint(path)}`) and commit that")
            except json.JSONDecodeError as e:
                return n, f"column {e.colno}: {e.msg}", text, _FIX_LINE
            except ValueError as e:
                fix = _FIX_BIG if "float64" in str(e) else _FIX_LINE
                return n, str(e), text, fix
            if "surrogate" in message and _lone_surrogate(rows):  # ("\ud800": QA text64)
                return (n, "a string holding a lone surrogate escape (such as \\ud800, left by "
                        "a bad decoding), which no UTF-8 text holds", text, _FIX_LINE)
            if changed is None or steps is None:
                continue
            for row in rows:
                for v in values_at(row, tuple(None if s == "[]" else s for s in steps)):
                    kind = _kind(v)
                    if kind == changed.group(3) and changed.group(2) in seen:
                        return (n, f"{'/'.join(steps) or 'the line'} is a {kind}", text,
                                "give the field one type on every line (a string on every "
                                "line, say), or remove the line")
                    if kind != "null":
                        seen.add(kind)
    return None


def _lone_surrogate(rows: list[Any]) -> bool:
    try:
        json.dumps(rows, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _objects(line: str) -> Iterator[Any]:
    """The JSON values of one line, as pyarrow reads them (several may share a line)."""
    decoder = json.JSONDecoder(parse_float=_finite,  # an int of any size is read
                               object_pairs_hook=_no_repeats)
    at, end = 0, len(line)
    while True:
        while at < end and line[at] in " \t\r\n":
            at += 1
        if at == end:
            return
        value, at = decoder.raw_decode(line, at)
        if not isinstance(value, dict):
            raise ValueError(f"a JSON {_kind(value)}, not an object")
        yield value


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is beyond float64's range")
    return value


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"an object names {k!r} twice")
        out[k] = v
    return out


def _kind(value: Any) -> str:
    """The JSON kind of ``value`` as pyarrow names it."""
    if value is None:
        return "null"
    for t, name in ((bool, "boolean"), (int | float, "number"), (str, "string"),
                    (list, "array"), (dict, "object")):
        if isinstance(value, t):
            return name
    return type(value).__name__


def _tsv_fix(quoted: bool) -> str:
    """The advice for a .tsv row of the wrong width: about its quoting, which dload judged
    from the file's first MiB (ingest/tsv_quoting.py) and may have judged wrong."""
    how = "quote_char=False" if quoted else "quote_char='\"', newlines_in_values=True"
    return ("give every row one value per column (an empty one is written with two tabs); "
            f"dload read this .tsv {'with' if quoted else 'without'} CSV quoting, as its first "
            f"MiB {'looked quoted' if quoted else 'showed none'}: if that is wrong, commit the "
            "table pyarrow.csv.read_csv(path, parse_options=pyarrow.csv.ParseOptions("
            f"delimiter='\\t', {how})) reads")


def _utf16(path: str, endpoint_url: str | None) -> bool:
    """Whether a text file starts with a UTF-16 byte order mark."""
    f, _ = open_table_file(path, endpoint_url)
    with f:
        return f.read(2) in (b"\xff\xfe", b"\xfe\xff")


def _quoted(path: str, endpoint_url: str | None) -> bool:
    from dload_arrow.ingest.tsv_quoting import tsv_quoting

    return tsv_quoting(path, endpoint_url) is not None


def _reader(f: Any, path: str, endpoint_url: str | None) -> tuple[Any, str]:
    """A csv reader over ``f`` as dload reads ``path`` (its delimiter and quoting)."""
    text = io.TextIOWrapper(f, encoding="utf-8", errors="replace", newline="")
    sep = "\t" if is_tsv(path) else ","
    bare = sep == "\t" and not _quoted(path, endpoint_url)
    return (csv.reader(text, delimiter=sep, quoting=csv.QUOTE_NONE) if bare else
            csv.reader(text, delimiter=sep)), sep


def _row_names(path: str, endpoint_url: str | None, columns: int) -> bool:
    """Whether each of the first rows (200 at most, 2 at least) has one field more than the
    header: R's row names, not one value holding the delimiter (QA review59f)."""
    f, _ = open_table_file(path, endpoint_url)
    with f, contextlib.suppress(csv.Error):
        reader, _sep = _reader(f, path, endpoint_url)
        rows = [len(r) for _, r in zip(range(201), reader, strict=False) if r][1:]
        return len(rows) >= 2 and all(n == columns + 1 for n in rows)
    return False
