"""Times finer than their column's unit, given as Python values: refused, never truncated.

``pa.array`` truncates a ``timedelta`` of 1.5 s into ``duration[s]``, a ``time`` with a half
second into ``time32[s]``, a pandas ``Timedelta`` of 999 ns into ``duration[us]``, at any
depth (``list<duration[s]>``), without a word (QA dtypes66). A table is refused for the same
values (Arrow's safe cast). So a sample column whose type holds a coarse time unit is built
once more with nanosecond units and cast safely to its type; the first value the cast refuses
is named. Flat timestamp columns have their own, more specific refusal (``lossless``).
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
    """``t`` with every time unit coarser than ``unit`` made ``unit``; None when none is."""
    coarse = ("s", "ms", "us")[:("s", "ms", "us", "ns").index(unit)]
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t):
        if t.unit not in coarse:
            return None
        return (pa.timestamp(unit, t.tz) if pa.types.is_timestamp(t) else pa.duration(unit)
                if pa.types.is_duration(t) else pa.time64(unit))
    if pa.types.is_struct(t):
        inner = [_finest(f.type, unit) for f in t]
        return None if all(x is None for x in inner) else pa.struct(
            [f if x is None else f.with_type(x) for f, x in zip(t, inner, strict=True)])
    if pa.types.is_map(t):
        k, v = _finest(t.key_type, unit), _finest(t.item_type, unit)
        return None if k is None and v is None else pa.map_(
            t.key_field.with_type(k or t.key_type), t.item_field.with_type(v or t.item_type),
            t.keys_sorted)
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return None
    x = _finest(t.value_type, unit)
    if x is None:
        return None
    f = t.value_field.with_type(x)
    return (pa.list_(f, t.list_size) if pa.types.is_fixed_size_list(t) else pa.large_list(f)
            if pa.types.is_large_list(t) else pa.list_view(f) if pa.types.is_list_view(t)
            else pa.large_list_view(f) if pa.types.is_large_list_view(t) else pa.list_(f))


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


def _typed(v: Any, t: pa.DataType, unit: str) -> Any:
    """``v`` (a value of type ``t``) for ``t`` with ``unit`` times: its time leaves through
    ``_counted`` at any depth (QA review66b: a struct holding an int was left unchecked)."""
    if v is None:
        return v
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t):
        return _counted(v, unit, t)
    if pa.types.is_struct(t) and isinstance(v, Mapping):
        return {k: x if (i := t.get_field_index(k)) < 0 else _typed(x, t.field(i).type, unit)
                for k, x in v.items()}
    if pa.types.is_map(t):
        pairs = list(v.items()) if isinstance(v, Mapping) else v
        if isinstance(pairs, list) and all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
            return [(_typed(k, t.key_type, unit), _typed(x, t.item_type, unit))
                    for k, x in pairs]
        return v
    if t.num_fields == 1 and isinstance(v, list | tuple):  # the list kinds
        return [_typed(x, t.value_type, unit) for x in v]
    return v


def _fits(values: Sequence[Any], t: pa.DataType, units: tuple[str, ...]) -> bool | None:
    """Whether ``values`` stored as ``t`` keep every time: built with the first of ``units``
    that builds them and cast back safely; None when none builds them."""
    for unit in units:
        fine = _finest(t, unit)
        if fine is None:
            return True
        try:
            wide = typed_array([_typed(v, t, unit) for v in values], fine)
        except _BUILD_ERRORS:
            continue
        try:
            wide.cast(t, safe=True)
            return True
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
    return None


def _holds_fine(v: Any) -> bool:
    """Whether ``v`` holds a time finer than microseconds: a pandas value with nanoseconds,
    a numpy one of a finer unit (QA review66c: every numpy time, checked one by one)."""
    if isinstance(v, Mapping):
        return any(map(_holds_fine, v.values()))
    if isinstance(v, list | tuple):
        return any(map(_holds_fine, v))
    if isinstance(v, np.datetime64 | np.timedelta64):
        return np.datetime_data(v.dtype)[0] in ("ns", "ps", "fs", "as")
    return bool(getattr(v, "nanosecond", 0) or getattr(v, "nanoseconds", 0))


def refuse_truncation(rows: Sequence[tuple[str, Mapping[str, Any]]], field: pa.Field,
                      values: Sequence[Any]) -> None:
    """SchemaError naming the first sample whose time ``field``'s type would truncate."""
    t = field.type
    if _finest(t, "ns") is None or (_finest(t, "us") is None and (t.num_fields or all(
            v is None or type(v).__module__ in _STDLIB for v in values))):
        return  # (us and ns units only: stdlib times fit them; nested ones: time_numbers)
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
