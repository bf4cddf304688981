"""Numbers are not times: refuse them in a timestamp, date, duration or time column.

Arrow converts an integer into a timestamp column as a count of the column's unit since
1970 (``1700000000`` epoch seconds in a ``timestamp[us]`` column is 28 minutes past midnight
on 1 January 1970), into a duration column as a count of its unit (``5`` seconds meant,
5 microseconds stored), into a date column as days. Which unit a column has depends on where
its first values came from (a CSV's fractional seconds give ``ns``), so a day whose export
switched to epoch numbers would store wrong times without a word. A date into a zoned
timestamp column is read as midnight UTC (01:00 in Berlin), the shift a naive timestamp is
refused for. Both are refused here, for samples (:func:`number_refusal`, one of
``lossless.py``'s refusals) and for columns of tables (:func:`time_cast_refusal`), with the
conversion that states the unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.store.nested_kinds import COLUMN
from dload_arrow.type_walk import holds_type

__all__ = ["number_refusal", "time_cast_refusal"]

_UNITS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


def _lists(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t)
            or pa.types.is_fixed_size_list(t))


def _temporal(t: pa.DataType) -> bool:
    return (pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t)
            or pa.types.is_time(t))


def _numeric(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_decimal(t))


def _why(t: pa.DataType) -> str:
    """Why numbers cannot go into the temporal column ``t``, and the conversion to use."""
    if pa.types.is_date(t):
        return (f"the column holds dates ({t}); a number would be stored as days since "
                "1970-01-01. Convert it to dates first (datetime.date, pandas: "
                "pd.to_datetime(col, unit=...).dt.date)")
    unit = getattr(t, "unit", "s")
    words = _UNITS.get(unit, unit)
    if pa.types.is_duration(t):
        return (f"the column holds durations ({t}); a number would be stored as {words} "
                "whatever unit it meant. Convert it to durations first (datetime.timedelta("
                "seconds=v), pandas: pd.to_timedelta(col, unit='s'))")
    if pa.types.is_time(t):
        return (f"the column holds times of day ({t}); a number would be stored as {words} "
                "since midnight. Convert it to times first (datetime.time)")
    return (f"the column holds timestamps ({t}); a number would be stored as {words} since "
            "1970-01-01 (epoch seconds in a microsecond column land in January 1970). Convert "
            "it to times first, stating its unit (datetime.datetime.fromtimestamp(v, "
            "datetime.timezone.utc), pandas: pd.to_datetime(col, unit='s'))")


def _number_kind(k: type) -> bool:  # (numpy's timedelta64 is one of its integers)
    return issubclass(k, bool | int | float | np.number) and not issubclass(k, np.timedelta64)


def _holds_number(v: Any) -> bool:
    if _number_kind(type(v)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biuf" or (v.dtype.kind == "O" and any(map(_holds_number, v)))
    if isinstance(v, list | tuple):
        return any(_holds_number(x) for x in v)
    return False


def number_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]) -> Any:
    """A refusal of numbers in a temporal column (or a list of them, or a field of a struct
    inside it), for ``check_lossless``; None when the column holds no time, or the values'
    kinds hold no number and no list (one set lookup)."""
    from dload_arrow.store.lossless import leaf_type

    leaf = leaf_type(t)
    if not _temporal(leaf):
        if t.num_fields and holds_type(t, _temporal):  # a struct's field (QA review64b)
            return lambda v: (None if (at := _number_at(v, t, "")) is None else
                              f"holds a number at {COLUMN}{at[0]}, but "
                              + _why(at[1]).replace("the column holds", "that field holds", 1))
        return None
    if t == leaf and not any(map(_number_kind, kinds)):
        return None
    why = "is a number, but " + _why(leaf)
    return lambda v: why if _holds_number(v) else None


def _number_at(v: Any, t: pa.DataType, path: str) -> tuple[str, pa.DataType] | None:
    """The path and type of the first temporal field of ``t`` holding a number in ``v``."""
    if v is None:
        return None
    if _temporal(t):
        return (path, t) if _holds_number(v) else None
    if pa.types.is_struct(t) and isinstance(v, Mapping):
        for i in range(t.num_fields):
            f = t.field(i)
            if (got := _number_at(v.get(f.name), f.type, f"{path}.{f.name}")) is not None:
                return got
    elif hasattr(t, "value_type") and t.num_fields and isinstance(v, list | tuple):
        for x in v:  # (a list's items; a map's are pairs, not walked)
            if (got := _number_at(x, t.value_type, f"{path}[]")) is not None:
                return got
    return None


def time_cast_refusal(got: pa.DataType, want: pa.DataType, numbers: bool = True
                      ) -> str | None:
    """Why a column of leaf type ``got`` must not be cast to one of leaf type ``want`` (numbers
    into times, unless ``numbers`` is False: a commit's schema= states the unit; dates into
    timestamps of a zone other than UTC), after "its values"; None when it may. Structs are
    compared field by field (QA review64b: a struct's time field took numbers)."""
    if pa.types.is_struct(got) and pa.types.is_struct(want):
        for i in range(want.num_fields):
            f = want.field(i)
            j = got.get_field_index(f.name)
            inner = None if j < 0 else time_cast_refusal(got.field(j).type, f.type, numbers)
            if inner is not None:
                return f"at .{f.name} {inner}"
        return None
    if _lists(got) and _lists(want):
        inner = time_cast_refusal(got.value_type, want.value_type, numbers)
        return None if inner is None else f"at [] {inner}"
    if numbers and _temporal(want) and _numeric(got):
        return f"are numbers ({got}), but " + _why(want)
    if (pa.types.is_date(got) and pa.types.is_timestamp(want) and want.tz is not None
            and want.tz.upper() not in ("UTC", "Z", "+00:00", "ETC/UTC")):  # (midnight UTC)
        return (f"are dates ({got}), but the column's timestamps ({want}) are in {want.tz}; "
                f"Arrow would read each as midnight UTC. Give them a time and the zone "
                f"(pandas: pd.to_datetime(col).dt.tz_localize({want.tz!r}))")
    return None
