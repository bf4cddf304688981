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

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.store.nested_kinds import COLUMN
from dload_arrow.type_walk import is_list_type

__all__ = ["number_refusal", "time_cast_refusal"]

_UNITS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


# Zones whose time is UTC's, as Arrow names them (a date is its own midnight there)
_UTC = {"UTC", "Etc/UTC", "+00:00", "GMT", "Etc/GMT", "UCT", "Etc/UCT", "Zulu", "Etc/Zulu",
        "Universal", "Etc/Universal", "Greenwich", "Etc/Greenwich", "GMT0", "Etc/GMT0",
        "GMT+0", "GMT-0", "Etc/GMT+0", "Etc/GMT-0"}


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
    land = "" if unit == "s" else " (epoch seconds in this column land in January 1970)"
    return (f"the column holds timestamps ({t}); a number would be stored as {words} since "
            f"1970-01-01{land}. Convert "
            "it to times first, stating its unit (datetime.datetime.fromtimestamp(v, "
            "datetime.timezone.utc), pandas: pd.to_datetime(col, unit='s'))")


def _number_kind(k: type) -> bool:  # (numpy's timedelta64 is one of its integers)
    return issubclass(k, bool | int | float | np.number) and not issubclass(k, np.timedelta64)


def _holds_float(v: Any, leaf: Any = None) -> bool:
    """A float, or numpy floats (a whole float included: a commit's schema= takes ints)."""
    if isinstance(v, np.ndarray):
        return v.dtype.kind == "f"
    return isinstance(v, float | np.floating)


def _holds_number(v: Any, leaf: Any = None) -> bool:
    if _number_kind(type(v)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "biuf" or (v.dtype.kind == "O" and any(map(_holds_number, v)))
    if isinstance(v, list | tuple):
        return any(_holds_number(x) for x in v)
    return False


def number_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any],
                   floats_only: bool = False) -> Any:
    """A refusal of numbers in a temporal column, or in a time field inside a list, struct or
    map column, for ``check_lossless`` (``floats_only``: a commit's schema= gave the type,
    whose unit makes an int a count of it, and a float's fraction would be dropped); None
    when the column holds no time, or a time column's values hold no number (one lookup).
    Inside a list, struct or map it refuses times finer than their field's unit too (a pandas
    Timestamp's nanoseconds in a timestamp[us] field were dropped: QA review64d; a flat
    column's are ``lossless._time_refusal``'s), in the same walk (QA review64e: two walks
    made nested commits 1.5-2x slower)."""
    flat = t.value_type if pa.types.is_dictionary(t) else t
    if _temporal(flat) and not any(map(_number_kind, kinds)):
        return None
    number = _holds_float if floats_only else _holds_number
    find = _finder(t, number if _temporal(flat) else (
        lambda v, leaf: number(v, leaf) or _finer(v, leaf)))
    if find is None:
        return None

    def refusal(v: Any) -> str | None:
        got = find(v)
        if got is None:
            return None
        path, leaf, x = got
        at = f" at {COLUMN}{path}" if path else ""
        if isinstance(x, np.ndarray | np.generic) and not number(x, leaf):
            unit = getattr(leaf, "unit", "us")
            return (f"holds numpy {x.dtype} times{at}, but that field holds {leaf}: Arrow "
                    "would read their counts in its unit; convert them (.astype('"
                    f"{x.dtype.str[1]}8[{unit}]')), or give the field the unit of the arrays")
        if not number(x, leaf):
            return (f"holds a time{at} finer than its field's unit ({leaf}); storing it "
                    "would cut it: round it yourself, or commit the column with a finer unit "
                    "(schema= with pa.timestamp('ns') there)")
        if floats_only and isinstance(x, float) and x != x:  # NaN: no time (QA review64d)
            return f"is NaN{at}, but {leaf} holds times: give None for a missing one"
        if floats_only:
            return (f"holds a float{at}, but {leaf} takes whole numbers of its unit, as "
                    "ints (a float's fraction would be dropped): int(v) if it is whole, or "
                    "give times")
        if not path:
            return "is a number, but " + _why(leaf)
        return f"holds a number{at}, but " + _why(leaf).replace("the column", "that field", 1)
    return refusal


def _finer(v: Any, t: pa.DataType) -> bool:
    """Whether ``v`` would not be stored as it is in the time field ``t``: finer than its
    unit, or numpy times of another unit (Arrow reads an array's counts as ``t``'s unit:
    a 1 s duration of an ns array stored as 1000 s, QA review64g)."""
    if isinstance(v, np.ndarray | np.generic) and v.dtype.kind in "Mm":
        return str(v.dtype).split("[")[-1].rstrip("]") != getattr(t, "unit", None)
    if getattr(t, "unit", "ns") != "ns" and isinstance(v, dt.timedelta | dt.time) and (
            pa.types.is_duration(t) or pa.types.is_time(t)):  # (QA review66b: nested ones)
        fraction = v.microseconds if isinstance(v, dt.timedelta) else v.microsecond
        return bool(getattr(v, "nanoseconds", 0) or fraction % {"s": 10**6, "ms": 1000}.get(
            t.unit, 1))
    if not pa.types.is_timestamp(t) or t.unit == "ns" or not hasattr(v, "microsecond"):
        return False
    if getattr(v, "nanosecond", 0):
        return True
    per = {"s": 10**6, "ms": 1000}.get(t.unit, 1)
    return bool(v.microsecond % per)


Found = tuple[str, pa.DataType, Any] | None  # a time field's path, type and value found


def _finder(t: pa.DataType, test: Callable[[Any, pa.DataType], bool]
            ) -> Callable[[Any], Found] | None:
    """A function giving the first time field of a value of type ``t`` whose value passes
    ``test``, walking only the fields that lead to one (QA review64c: walking every field
    made a commit of list<struct<timestamp>> samples 3x slower); None: ``t`` holds no time."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if _temporal(t):
        return lambda v: ("", t, v) if test(v, t) else None
    if pa.types.is_struct(t):
        subs = [(f.name, find) for f in (t.field(i) for i in range(t.num_fields))
                if (find := _finder(f.type, test)) is not None]
        if not subs:
            return None

        def struct(v: Any) -> Found:
            if isinstance(v, Mapping):
                for name, find in subs:
                    x = v.get(name)
                    if x is not None and (got := find(x)) is not None:
                        return f".{name}{got[0]}", got[1], got[2]
            return None
        return struct
    if is_list_type(t) or pa.types.is_map(t):
        items = _finder(t.item_type if pa.types.is_map(t) else t.value_type, test)
        keys = _finder(t.key_type, test) if pa.types.is_map(t) else None
        if items is None and keys is None:
            return None
        return lambda v: _in_items(v, keys, items, pa.types.is_map(t))
    return None


def _in_items(v: Any, keys: Callable[[Any], Found] | None, items: Callable[[Any], Found] | None,
              is_map: bool) -> Found:
    """The first hit among a list's items (numpy: its numbers), or a map's keys and values
    (a dict, or a list of pairs)."""
    if isinstance(v, np.ndarray) and items is not None:
        return items(v) if v.dtype.kind != "O" else _in_items(v.tolist(), keys, items, is_map)
    if is_map:
        pairs = v.items() if isinstance(v, Mapping) else v if isinstance(v, list) else ()
        for pair in pairs:
            if isinstance(pair, tuple) and len(pair) == 2:
                for find, x, where in ((keys, pair[0], "{key}"), (items, pair[1], "{value}")):
                    if find is not None and x is not None and (got := find(x)) is not None:
                        return where + got[0], got[1], got[2]
    elif isinstance(v, list | tuple) and items is not None:
        for x in v:
            if x is not None and (got := items(x)) is not None:
                return "[]" + got[0], got[1], got[2]
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
    if is_list_type(got) and is_list_type(want):
        inner = time_cast_refusal(got.value_type, want.value_type, numbers)
        return None if inner is None else f"at [] {inner}"
    if pa.types.is_map(got) and pa.types.is_map(want):  # (QA review64c, 64d: its values and
        for a, b, at in ((got.key_type, want.key_type, "{key}"),  # its keys)
                         (got.item_type, want.item_type, "{value}")):
            if (inner := time_cast_refusal(a, b, numbers)) is not None:
                return f"at {at} {inner}"
        return None
    if pa.types.is_dictionary(got):  # dictionary-encoded numbers are numbers
        return time_cast_refusal(got.value_type, want, numbers)
    if numbers and _temporal(want) and _numeric(got):
        return f"are numbers ({got}), but " + _why(want)
    if (pa.types.is_date(got) and pa.types.is_timestamp(want) and want.tz is not None
            and want.tz not in _UTC):  # (midnight UTC: the date's)
        return (f"are dates ({got}), but the column's timestamps ({want}) are in {want.tz}; "
                f"Arrow would read each as midnight UTC. Give them a time and the zone "
                f"(pandas: pd.to_datetime(col).dt.tz_localize({want.tz!r}))")
    return None
