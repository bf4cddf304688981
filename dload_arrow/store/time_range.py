"""Times a commit refuses: dates and timestamps outside years 1-9999.

Arrow and Parquet hold them (a date32 reaches year 5.8 million), but Python's ``datetime``
does not, so the shard statistics of such a column (``date value out of range`` at commit)
and every reader going through Python values (``describe()``, ``samples()``, ``head()``,
``get()``) failed on them, far from the commit. Refused at the commit
instead, naming the column, the value and what to store. ``timestamp[ns]`` always fits.
Times nested in lists, structs and maps are checked too, named by their path in the column
(``col[].field``; a map's keys and values are ``col[].key`` and ``col[].value``).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import SchemaError
from dload_arrow.type_walk import holds_type

__all__ = ["check_nested_time_range", "check_time_range"]

_FIRST, _END = -62135596800, 253402300800  # 0001-01-01 and 10000-01-01, seconds after 1970
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6}


def check_time_range(name: str, col: pa.Array | pa.ChunkedArray) -> None:
    """Raise SchemaError if the date or timestamp column ``col`` holds a time outside years
    1-9999 (the range of Python's datetime)."""
    t = col.type
    if pa.types.is_date32(t):
        unit, per = "D", None
        lo, hi = _FIRST // 86400, _END // 86400 - 1
    elif pa.types.is_date64(t) or (pa.types.is_timestamp(t) and t.unit != "ns"):
        unit = "ms" if pa.types.is_date64(t) else t.unit
        per = _PER_SECOND[unit]
        lo, hi = _FIRST * per, _END * per - 1
    else:
        return
    if col.null_count == len(col):
        return
    ticks = col.cast(pa.int32() if pa.types.is_date32(t) else pa.int64())
    mm = pc.min_max(ticks)
    low, high = mm["min"].as_py(), mm["max"].as_py()
    if lo <= low and high <= hi:
        if pa.types.is_timestamp(t) and t.tz:
            _check_in_zone(name, t, low, high)
        return
    bad = high if high > hi else low
    when = str(np.array(bad, dtype=f"datetime64[{unit}]"))
    counted = "days" if per is None else {"s": "seconds", "ms": "milliseconds",
                                          "us": "microseconds"}[unit]
    raise SchemaError(
        f"column {name!r} ({t}) holds {when} ({bad} {counted} after 1970-01-01), outside years "
        "1-9999: Python's datetime cannot hold it, so describe() and samples() would fail on "
        "it; store the column as int64 "
        f"(col.cast(pa.int64()), {counted} after 1970-01-01), or leave those rows out")


def check_nested_time_range(name: str, col: pa.Array | pa.ChunkedArray) -> None:
    """:func:`check_time_range` for each date or timestamp inside the nested column ``col``
    (lists, structs, maps, dictionaries), naming it by its path (``name[].field``)."""
    if not _holds_time(col.type):
        return
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    for chunk in chunks:
        _check_values(name, chunk)


def _holds_time(t: pa.DataType) -> bool:
    return holds_type(t, lambda u: pa.types.is_date(u) or pa.types.is_timestamp(u))


def _check_values(path: str, arr: pa.Array) -> None:
    """Walk ``arr`` down to its times; each level keeps only the values of valid parents
    (a child under a null struct or list is never read back, whatever it holds)."""
    t = arr.type
    if not _holds_time(t):
        return
    if pa.types.is_dictionary(t):
        _check_values(path, arr.dictionary_decode())
    elif pa.types.is_map(t):
        # MapArray.keys/.items ignore a slice's offset: go through list<struct<key, value>>
        entries = pa.struct([t.key_field, t.item_field])
        flat = arr.cast(pa.list_(pa.field("entries", entries, nullable=False))).flatten()
        for f, child in zip(entries, flat.flatten(), strict=True):
            _check_values(f"{path}[].{f.name}", child)
    elif pa.types.is_struct(t):
        for f, child in zip(t, arr.flatten(), strict=True):  # children masked by the parent
            _check_values(f"{path}.{f.name}", child)
    elif t.num_fields == 1 and hasattr(arr, "flatten"):  # list, large_list, fixed_size, view
        _check_values(f"{path}[]", arr.flatten())
    else:
        check_time_range(path, arr)


def _check_in_zone(name: str, t: pa.TimestampType, low: int, high: int) -> None:
    """A zoned time is read back in its zone: the first and last instants, in range in UTC,
    must be in range there too (9999-12-31 23:00 UTC is year 10000 in Berlin)."""
    try:
        zone = pa.lib.string_to_tzinfo(t.tz)
    except (pa.ArrowInvalid, ValueError, KeyError):  # a zone Python cannot name ('+5'):
        return  # readers fall back on Arrow's own conversion, as before
    per = _PER_SECOND[t.unit]
    for tick in (low, high):
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
            microseconds=tick * (10**6 // per))
        try:
            moment.astimezone(zone)
        except (OverflowError, ValueError):
            raise SchemaError(
                f"column {name!r} ({t}) holds {moment:%Y-%m-%d %H:%M:%S} UTC, which is outside "
                f"years 1-9999 in the column's zone {t.tz}: Python's datetime cannot hold it "
                "there, so describe() and samples() would fail on it; store the column in UTC "
                f"(col.cast(pa.timestamp({t.unit!r}, 'UTC'))), or leave those rows out"
            ) from None
