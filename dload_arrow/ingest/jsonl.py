"""JSON Lines files read in one parse, with the zones of their times.

pyarrow's JSON reader types date-like strings as timestamps (``"2024-01-01"`` as midnight) and
drops their zones, and has no switch for it. So the file's first lines (up to 1 MiB) are read
first to find the columns it types so, and the whole file is then read once with those
columns as text, typed here: a column whose every value names its zone (``+02:00``, ``Z``) is
a UTC timestamp column, as in a CSV; one where only some do is text as written (pyarrow would
drop the zones, shifting the times without one); one with no zone is pyarrow's timestamps.
Only a column whose first timestamp comes after those lines is read a second time (its text
alone). Keys and the columns an append's dataset stores as text stay text as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.ingest.table_stream import open_table_file
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["read_json"]

# A time of day then a zone, as pyarrow's ISO 8601 reading takes them: Z, +02, +0200, +02:00.
_ZONED = r"[0-9]:[0-9]{2}(:[0-9]{2}(\.[0-9]*)?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"
_PROBE = 1 << 20  # bytes of whole lines read to find the timestamp columns


def read_json(f: Any, path: str, endpoint_url: str | None, text_columns: Sequence[str],
              key: str | None) -> pa.Table:
    """A JSON Lines file (``f``, open at its start), its times typed as the module says."""
    import pyarrow.json as pjson

    if not f.seekable():  # a decompressing stream: read whole, as pyarrow reads a file anyway
        f = pa.BufferReader(f.read())
    probe = _probe(f)
    dated = [] if probe is None else [x.name for x in probe if pa.types.is_timestamp(x.type)]
    options = pjson.ParseOptions(explicit_schema=pa.schema([(c, pa.string()) for c in dated]),
                                 unexpected_field_behavior="infer")
    table = _read(f, options)
    # pyarrow's JSON reader copies string bytes unchecked: text that is not UTF-8 would be
    # stored, then fail in every reader. ArrowInvalid: the caller names the line (read_errors).
    try:
        table.validate(full=True)  # values; a key (a column's name) fails as it is decoded
    except UnicodeDecodeError as e:
        raise pa.ArrowInvalid(f"a key is not UTF-8 text ({e})") from e
    if dated and probe is not None:  # the explicit columns come first: the file's order back
        table = table.select([*(n for n in probe.names if n in table.column_names),
                              *(n for n in table.column_names if n not in probe.names)])
    text = {*text_columns, *([key] if key else []), KEY_COLUMN}
    for c in dated:
        table = _typed(table, c, probe.field(c).type.unit if probe else "s", c in text)
    late = [x.name for x in table.schema if pa.types.is_timestamp(x.type) and x.name not in dated]
    return _read_late(table, late, path, endpoint_url, text) if late else table


def _read(f: Any, options: Any) -> pa.Table:
    """``pyarrow.json.read_json`` of ``f``, in blocks that hold its longest line: pyarrow's
    1 MiB blocks refused a document of 2 MB or more ("straddling object", QA text64)."""
    import pyarrow.json as pjson

    try:
        return pjson.read_json(f, parse_options=options)
    except pa.ArrowInvalid as e:
        if "straddl" not in str(e) or not f.seekable():
            raise
    f.seek(0)
    longest = cur = 0
    while chunk := f.read(1 << 24):
        *whole, cur_tail = chunk.split(b"\n")
        if whole:
            longest = max(longest, cur + len(whole[0]), *(len(x) for x in whole[1:]))
            cur = 0
        cur += len(cur_tail)
    f.seek(0)
    size = min(max(longest, cur) + (1 << 20), 2**31 - 1)
    return pjson.read_json(f, parse_options=options,
                           read_options=pjson.ReadOptions(block_size=size))


def _probe(f: Any) -> pa.Schema | None:
    """The schema pyarrow infers from the file's first lines; ``f`` back at its start. None:
    no whole line in the first MiB, a file that cannot seek, or lines pyarrow refuses (the
    whole read then says where)."""
    import pyarrow.json as pjson

    if not f.seekable():
        return None
    head = f.read(_PROBE)
    f.seek(0)
    if len(head) == _PROBE:
        head = head[: head.rfind(b"\n") + 1]
    try:
        return pjson.read_json(pa.BufferReader(head)).schema if head.strip() else None
    except pa.ArrowInvalid:
        return None


def _typed(table: pa.Table, c: str, unit: str, as_text: bool) -> pa.Table:
    """Column ``c`` of ``table`` (its text as written) typed as the module says."""
    col = table.column(c)
    if as_text or not pa.types.is_string(col.type):
        return table
    zoned = pc.sum(pc.match_substring_regex(col, _ZONED)).as_py() or 0
    if zoned not in (0, len(col) - col.null_count):
        return table  # some zoned, some not: text as written
    try:
        col = col.cast(pa.timestamp(unit, "UTC" if zoned else None))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return table  # later values are no times: text, as pyarrow's inference gives them
    return table.set_column(table.schema.get_field_index(c), table.schema.field(c).with_type(
        col.type), col)


def _read_late(table: pa.Table, dated: list[str], path: str, endpoint_url: str | None,
               text: set[str]) -> pa.Table:
    """``table`` with its timestamp columns ``dated`` (first typed after the probed lines)
    typed from their text, read again (only those columns are parsed into values)."""
    import pyarrow.json as pjson

    again, _ = open_table_file(path, endpoint_url)
    with again:
        options = pjson.ParseOptions(explicit_schema=pa.schema([(c, pa.string()) for c in dated]),
                                     unexpected_field_behavior="ignore")
        written = _read(again, options)
    for c in dated:
        col = written.column(c)
        if c not in text and not pc.any(pc.match_substring_regex(col, _ZONED)).as_py():
            continue  # no zones: pyarrow's naive timestamps
        unit = table.schema.field(c).type.unit
        i = table.schema.get_field_index(c)
        table = _typed(table.set_column(i, pa.field(c, pa.string()), col), c, unit, c in text)
    return table
