"""Times finer than their column's unit, given as Python values: refused, never truncated.

``pa.array`` truncates a ``timedelta`` of 1.5 s into ``duration[s]``, a ``time`` with a half
second into ``time32[s]``, a pandas ``Timedelta`` of 999 ns into ``duration[us]``, without a
word (QA dtypes66). A table is refused for the same values (Arrow's safe cast). So a flat time
column of a coarse unit is built once more with nanosecond units and cast safely to its type;
the first value the cast refuses is named. Nested times are ``time_numbers``' (their path
named), flat timestamps have a more specific refusal of their own (``lossless``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import inferred_type, typed_array
from dload_arrow.errors import SchemaError, shown

__all__ = ["inferred_ns", "refuse_truncation"]

_STDLIB = ("datetime",)  # the modules whose times hold microseconds at most
_BUILD_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError,
                 TypeError, ValueError)


_NS_SPAN = dt.timedelta(days=106_751)  # what duration[ns] holds either way (292 years)


def inferred_ns(values: Sequence[Any]) -> pa.DataType:
    """``inferred_type``, with pandas' Timedeltas of unit ns as ``duration[ns]`` where every
    value fits (pa.array makes them us, truncating 999 ns to 0), as Timestamps are."""
    t = inferred_type(values)
    if (pa.types.is_duration(t) and t.unit == "us"
            and any(getattr(v, "unit", None) == "ns" for v in values)
            and all(v is None or v != v or abs(v) < _NS_SPAN for v in values)):
        return pa.duration("ns")
    return t


def _finest(t: pa.DataType, unit: str) -> pa.DataType | None:
    """The time type ``t`` in ``unit`` where its own unit is coarser; None otherwise."""
    coarse = ("s", "ms", "us")[:("s", "ms", "us", "ns").index(unit)]
    if not (pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t)) or (
            t.unit not in coarse):
        return None
    return (pa.timestamp(unit, t.tz) if pa.types.is_timestamp(t) else pa.duration(unit)
            if pa.types.is_duration(t) else pa.time64(unit))


_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _counted(v: Any, unit: str, t: pa.DataType) -> Any:
    """A value of the time field ``t`` for the same field in ``unit``: a numpy datetime64 /
    timedelta64 as its count of ``unit`` (pa.array converts none of another unit than its
    type's), where that is exact; an int (a count of ``t``'s unit: time_numbers) as a count
    of ``unit``; any other value as it is."""
    if not isinstance(v, np.datetime64 | np.timedelta64):  # (timedelta64: an np.integer)
        if isinstance(v, int | np.integer) and not isinstance(v, bool):
            return int(v) * (_PER_SECOND[unit] // _PER_SECOND.get(getattr(t, "unit", ""), 1))
        return v
    if np.isnat(v):
        return v
    got, n = np.datetime_data(v.dtype)
    if got not in _PER_SECOND or _PER_SECOND[got] > _PER_SECOND[unit]:
        return v
    return int(v.astype(np.int64)) * n * (_PER_SECOND[unit] // _PER_SECOND[got])


def _fits(values: Sequence[Any], t: pa.DataType, units: tuple[str, ...]) -> bool | None:
    """Whether ``values`` stored as ``t`` keep every time: built with the first of ``units``
    that builds them and cast back safely; None when none builds them."""
    for unit in units:
        fine = _finest(t, unit)
        if fine is None:
            return True
        try:
            wide = typed_array([_counted(v, unit, t) for v in values], fine)
        except _BUILD_ERRORS:
            continue
        try:
            wide.cast(t, safe=True)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
    return None


def _holds_fine(v: Any) -> bool:
    """Whether ``v`` may be finer than microseconds: a pandas value with nanoseconds, a numpy
    one of a finer unit (QA review66c: every numpy time, checked one by one)."""
    if isinstance(v, np.datetime64 | np.timedelta64):
        return np.datetime_data(v.dtype)[0] in ("ns", "ps", "fs", "as")
    return bool(getattr(v, "nanosecond", 0) or getattr(v, "nanoseconds", 0))


def refuse_truncation(rows: Sequence[tuple[str, Mapping[str, Any]]], field: pa.Field,
                      values: Sequence[Any]) -> None:
    """SchemaError naming the first sample whose time ``field``'s type would truncate."""
    t = field.type
    if _finest(t, "ns") is None or (_finest(t, "us") is None and all(
            v is None or type(v).__module__ in _STDLIB for v in values)):
        return  # (us and ns units only: stdlib times fit them)
    whole = _fits(values, t, ("ns",))
    if whole is True:
        return
    if whole is None and _fits(values, t, ("us",)) is not False:  # beyond ns (1677-2262,
        # 292 years): every value fits in us; those that may be finer, one by one in ns
        picked = [(r, v) for r, v in zip(rows, values, strict=True) if _holds_fine(v)]
        rows, values = [r for r, _ in picked], [v for _, v in picked]
    for (key, _), v in zip(rows, values, strict=True):
        if _fits([v], t, ("ns", "us")) is False:
            raise SchemaError(
                f"sample {key!r}, column {field.name!r}: value {shown(v)} is finer than the "
                f"column's type ({t}); storing it would truncate it: round it yourself, or "
                "give the column a finer unit (schema=, or a new dataset)")
