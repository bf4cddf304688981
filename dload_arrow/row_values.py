"""Tables as rows of Python values, for printing (``dload sql``, ``head``, ``log``, ``demo``);
float32 values as their shortest decimals.

A date or timestamp beyond Python's years 1-9999 (``date '9999-12-31' + 1``, ``date
'-0100-01-01'``, DuckDB's ``'infinity'::timestamp``) has no ``datetime``: Arrow's
``to_pylist`` raises ``OverflowError`` for the whole table. Such a value is given as the text
DuckDB prints for it (``10000-01-01``, ``0101-01-01 (BC)``, ``infinity``), and every other
value as usual.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dload_arrow.arrays import pylist
from dload_arrow.type_walk import holds_type

__all__ = ["table_rows", "time_text"]

# DuckDB's infinities: the largest magnitude its date (int32 days) and timestamp (int64) hold.
_INFINITE = {32: 2**31 - 1, 64: 2**63 - 1}
_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def table_rows(table: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """``table.to_pylist()`` (one dict per row), with :func:`~dload_arrow.arrays.pylist`'s
    timestamps, and a time Python cannot hold as DuckDB's text of it (:func:`time_text`)."""
    if not table.num_columns:
        return table.to_pylist()
    columns = [_short(_values(c), c.type) if holds_type(c.type, pa.types.is_float32)
               else _values(c) for c in table.columns]
    return [dict(zip(table.column_names, r, strict=True)) for r in zip(*columns, strict=True)]


def _short(values: list[Any], t: pa.DataType) -> list[Any]:
    """float32 values as the shortest decimals that give them back (1.05, not float64's
    1.0499999523162842: QA audio59), as numpy prints them; inside lists and structs too."""
    import numpy as np

    if pa.types.is_float32(t):
        return [v if v is None or v != v or v in (float("inf"), float("-inf"))
                else float(str(np.float32(v))) for v in values]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [v if v is None else _short(v, t.value_type) for v in values]
    if pa.types.is_struct(t):
        names = [t.field(i) for i in range(t.num_fields)]
        return [v if not isinstance(v, dict) else {**v, **{
            f.name: _short([v.get(f.name)], f.type)[0] for f in names if f.name in v}}
            for v in values]
    return values


def _values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    try:
        return pylist(column)
    except (OverflowError, ValueError):  # some value is out of datetime's range
        pass
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t, valid = column.type, column.is_valid().to_pylist()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values, at, lists = _values(column.flatten()), 0, []
        for n in column.value_lengths().to_pylist():
            lists.append(None if n is None else values[at:at + n])
            at += n or 0
        return lists
    if pa.types.is_struct(t):
        fields = [_values(f) for f in column.flatten()]
        names = [t.field(i).name for i in range(t.num_fields)]
        return [dict(zip(names, r, strict=True)) if ok else None
                for ok, r in zip(valid, zip(*fields, strict=True), strict=True)]
    ticks, out = _ticks(t), []
    for i in range(len(column)):  # one by one: only the values out of range become text
        try:
            out.extend(pylist(column.slice(i, 1)))
        except (OverflowError, ValueError):
            out.append(str(column[i]) if ticks is None
                       else time_text(t, column.slice(i, 1).cast(ticks)[0].as_py()))
    return out


def _ticks(t: pa.DataType) -> pa.DataType | None:
    """The integer type a date or timestamp is stored as; None for other types."""
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_date64(t) or pa.types.is_timestamp(t):
        return pa.int64()
    return None


def time_text(t: pa.DataType, ticks: int) -> str:
    """A date or timestamp of type ``t`` stored as ``ticks``, as DuckDB prints it: any year
    (``0101-01-01 (BC)`` for year -100), ``infinity`` and ``-infinity``; a zoned timestamp in
    UTC (``+00``)."""
    if ((pa.types.is_date32(t) or pa.types.is_timestamp(t))
            and abs(ticks) == _INFINITE[t.bit_width]):
        return "infinity" if ticks > 0 else "-infinity"
    if pa.types.is_date64(t):
        ticks //= 86_400_000
    if not pa.types.is_timestamp(t):
        return _date_text(ticks)
    days, rest = divmod(ticks, _PER_DAY[t.unit])
    digits = _DIGITS[t.unit]
    seconds, fraction = divmod(rest, 10**digits)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if fraction:
        clock += "." + f"{fraction:0{digits}d}".rstrip("0")
    return f"{_date_text(days)} {clock}{'+00' if t.tz is not None else ''}"


def _date_text(days: int) -> str:
    """Days since 1970-01-01 as a proleptic Gregorian date (H. Hinnant's civil_from_days)."""
    z = days + 719_468
    era, doe = divmod(z, 146_097)
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    if year <= 0:  # year 0 is 1 BC, as DuckDB writes it
        return f"{1 - year:04d}-{month:02d}-{day:02d} (BC)"
    return f"{year:04d}-{month:02d}-{day:02d}"
