"""Refuse values a column would store changed, rather than store them silently.

``pa.array`` converts without a word: 2.5 into an int64 column gives 2, a datetime with a
time of day into a date column gives the date, 70000.0 into a float16 column gives inf, and
``b"ok"`` into a string column gives ``"ok"``. A sample's type is fixed by the first 1,024
samples (or by ``schema=``, or by the version appended to), so a value arriving later would
change silently. :func:`check_lossless` gives the sample path Arrow's safe-cast rule: a value
is accepted only when it is stored as it is (a whole float in an integer column, a midnight
datetime in a date column). :func:`overflow_row` is the table path's check of a float cast.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import SchemaError, shown
from dload_arrow.store.float_fits import leaf_type, overflow_refusal
from dload_arrow.store.nested_kinds import COLUMN, nested_kind_refusal
from dload_arrow.store.pair_checks import torch_advice
from dload_arrow.store.time_numbers import number_refusal

__all__ = ["check_lossless", "check_whole_numbers", "finer_hint", "leaf_type", "overflow_row",
           "zone_refusal"]

Refusal = Callable[[Any], str | None]  # why a value cannot be stored as it is, or None


def _is_float_type(k: type) -> bool:
    return issubclass(k, float | np.floating)


def _lossy(v: Any) -> bool:
    """Whether ``v`` (a scalar, an array or a list of them) holds a float with a fraction."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind != "f":
            return v.dtype.kind == "O" and any(_lossy(x) for x in v.reshape(-1).tolist())
        return bool(np.any(np.isfinite(v) & (v != np.trunc(v))))
    if isinstance(v, list | tuple):
        kinds = set(map(type, v))  # one C-level pass: lists of ints stop here
        if kinds <= {int, bool, type(None)}:
            return False
        return any(_lossy(x) for x in v)
    return _is_float_type(type(v)) and not float(v).is_integer() and np.isfinite(float(v))


def _nanos(v: dt.datetime) -> int:
    """A pandas Timestamp's nanoseconds (below its microseconds); 0 for a datetime."""
    return int(getattr(v, "nanosecond", 0))


def _fraction_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]
                      ) -> Refusal | None:
    if not pa.types.is_integer(leaf_type(t)):
        return None
    if pa.types.is_integer(t) and not any(map(_is_float_type, kinds)):
        return None  # no float: nothing to scan
    why = (f"has a fraction, but the column holds {t}; storing it would drop the fraction. "
           "Round it yourself, or commit the column as floats (schema=, or a new dataset)")
    return lambda v: why if _lossy(v) else None


def _time_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]
                  ) -> Refusal | None:
    """A datetime with a time of day in a date column; a datetime finer than a timestamp
    column's unit (a numpy datetime64 of another unit: Arrow cannot convert it)."""
    if pa.types.is_date(t) and any(issubclass(k, dt.datetime) for k in kinds):
        def day(v: Any) -> str | None:
            if not isinstance(v, dt.datetime) or (
                    v.time() == dt.time() and not _nanos(v)):
                return None
            return (f"has a time of day, but the column holds dates ({t}); storing it would "
                    "drop the time. Pass v.date() if the day is all you need, or commit the "
                    "column as timestamps (schema=pa.timestamp('us'), or a new dataset)")
        return day
    if pa.types.is_time(t) and dt.time in kinds:  # (QA dtypes66: the zone was dropped)
        return lambda v: None if getattr(v, "tzinfo", None) is None else (
            "has a zone, which a time of day column does not keep (no reading of a zone on a "
            "time of day is right, as where() says): give v.replace(tzinfo=None) for the "
            "wall time, or store a timestamp with its zone")
    if not pa.types.is_timestamp(t) or not any(
            issubclass(k, dt.datetime | np.datetime64) for k in kinds):
        return None
    per_second = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[t.unit]
    fix = (f"round it to {t.unit} yourself, or give the column a finer unit (schema="
           f"pa.timestamp('ns'), or a new dataset)")

    def finer(v: Any) -> str | None:
        aware = isinstance(v, dt.datetime) and v.utcoffset() is not None
        if aware is (t.tz is None):
            return "has" + zone_refusal(t, aware)
        if isinstance(v, np.datetime64):
            unit = np.datetime_data(v.dtype)[0]
            if unit == t.unit:
                return None
            return (f"is a numpy datetime64 in {unit}, but the column holds {t}; convert it "
                    f"(v.astype('datetime64[{t.unit}]') if no precision is lost), or "
                    f"give the column unit {unit!r} (schema=pa.timestamp({unit!r}))")
        if isinstance(v, dt.datetime) and per_second < 10**6 and (
                v.microsecond % (10**6 // per_second) or _nanos(v)):
            return f"is finer than the column's unit ({t}); storing it would truncate it: {fix}"
        if isinstance(v, dt.datetime) and per_second == 10**6 and _nanos(v):
            return f"has nanoseconds, but the column holds {t}: {fix}"
        return None
    return finer


def zone_refusal(t: pa.DataType, aware: bool) -> str:
    """Why a timestamp with a time zone (``aware``) or without one cannot go into the
    timestamp column ``t`` when ``t`` has not (or has) one, after "has"/"have": Arrow would
    store an aware value's UTC wall time in a naive column, and read a naive value as UTC in
    an aware one."""
    if aware:
        return (f" a time zone, but the column's timestamps ({t}) have none; Arrow would "
                "store the UTC time of day. Drop the zone yourself (datetime: "
                "v.replace(tzinfo=None) for the local time, pandas: .dt.tz_localize(None)), "
                "or commit the column with a time zone (a new dataset)")
    return (f" no time zone, but the column's timestamps ({t}) are in {t.tz}; Arrow would "
            f"read it as UTC. Give it its zone (datetime: v.replace(tzinfo=ZoneInfo("
            f"{t.tz!r})), pandas: .dt.tz_localize({t.tz!r}); a CSV or JSON file: write each "
            "time with its offset, 2024-01-02T10:00:00+00:00 or ...Z for UTC)")


_TEXT = (pa.types.is_string, pa.types.is_large_string)
_BYTES = (pa.types.is_binary, pa.types.is_large_binary)


def _kind_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]
                  ) -> Refusal | None:
    """str in a binary column, bytes in a string column: Arrow converts them silently. Where
    the values mix both (inferred as binary), the first value's kind is the column's."""
    text, raw = any(f(t) for f in _TEXT), any(f(t) for f in _BYTES)
    if not ((text and bytes in kinds) or (raw and str in kinds)):
        return None
    if {str, bytes} <= kinds:
        text = type(next(v for v in values if type(v) in (str, bytes))) is str
        said = "earlier samples of the column hold"
    else:
        said = f"the column holds {t}:"
    other = bytes if text else str
    fix = ("decode it (v.decode()) if it is text, or give the column bytes in every sample "
           "(v.encode() for the str ones)") if text else (
           "encode it (v.encode()), or give the column text in every sample (v.decode() for "
           "the bytes ones)")
    why = (f"is {other.__name__}, but {said} {'text (str)' if text else 'bytes'}; a column "
           f"holds one or the other: {fix}")
    return lambda v: why if type(v) is other else None


def _null_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]
                  ) -> Refusal | None:
    """A value Arrow cannot infer a type from (``inferred_type`` gives its column null)."""
    if not pa.types.is_null(t) or kinds <= {type(None)}:
        return None

    def uninferable(v: Any) -> str | None:
        try:
            pa.array([v])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            if isinstance(v, dt.timedelta):  # past int64 microseconds (QA roundtrip55)
                return (f"is not a value Arrow can store in microseconds ({e}); give the "
                        "column a coarser unit: schema= with pa.duration('s') for it")
            if (advice := torch_advice(v)) is not None or "type NAType" in str(e):  # (66b)
                return advice or ("holds pandas' NA, which no type is inferred from: give "
                                  "None there, or pass schema= (then NA is taken as null)")
            return (f"is not a value Arrow can store ({e}); make it one (dict keys must be "
                    "str, the items of a list of one type), or store it as JSON text "
                    "(json.dumps)")
        return None
    return uninferable


def _stated_times(t: pa.DataType, kinds: set[type], values: Sequence[Any]) -> Refusal | None:
    return number_refusal(t, kinds, values, floats_only=True)


_REFUSALS = (number_refusal, _fraction_refusal, overflow_refusal, _time_refusal, _kind_refusal,
             nested_kind_refusal, _null_refusal)


def check_lossless(rows: Sequence[tuple[str, Mapping[str, Any]]], field: pa.Field,
                   values: Sequence[Any], stated: bool = False) -> None:
    """Raise SchemaError naming the first sample whose value ``field`` would store changed
    (module doc). Costs one C-level pass over the value types when no value could be.
    ``stated``: the type is a commit's schema=, whose time units make numbers counts."""
    kinds = set(map(type, values))
    for refusal in _REFUSALS:
        refusal = _stated_times if stated and refusal is number_refusal else refusal
        why = refusal(field.type, kinds, values)
        if why is None:
            continue
        for (key, _), v in zip(rows, values, strict=True):
            missing = v is None or type(v).__name__ in ("NaTType", "NAType")  # pandas
            reason = None if missing else why(v)
            if reason is not None:
                reason = reason.replace(COLUMN, field.name)  # (a nested field's path)
                raise SchemaError(
                    f"sample {key!r}, column {field.name!r}: value {shown(v)} {reason}")


check_whole_numbers = check_lossless  # its first check, by the name store/pairs.py imports


def overflow_row(src: pa.Array, out: pa.Array) -> int | None:
    """The first row of ``src`` holding a finite float that its cast ``out`` (to a narrower
    float, possibly in lists) made infinite, or a nonzero one it made 0; None when there is
    none (one vectorised pass)."""
    to, of = leaf_type(out.type), leaf_type(src.type)
    if not (pa.types.is_floating(to) and pa.types.is_floating(of)
            and to.bit_width < of.bit_width):
        return None
    rows = None  # the row of each leaf value, once lists are flattened
    while src.type != of:
        parents = pc.list_parent_indices(src)
        rows = parents if rows is None else pc.take(rows, parents)
        src, out = src.flatten(), out.flatten()
    if to.bit_width < 32:
        out = out.cast(pa.float32())  # compute kernels take no float16
    bad = pc.and_(pc.is_finite(src), pc.or_(
        pc.invert(pc.is_finite(out)), pc.and_(pc.equal(out, 0), pc.not_equal(src, 0))))
    at = pc.index(bad, True).as_py()
    if at < 0:
        return None
    return at if rows is None else int(rows[at].as_py())


_UNITS = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def finer_hint(name: str, got: pa.DataType, want: pa.DataType, reason: str, dataset: str
               ) -> str | None:
    """Why appended times finer than the stored unit are refused, and the fix (QA tabular60:
    a first day's CSV of whole seconds stored ``timestamp[s]``; the next day's milliseconds
    were refused with a raw nanosecond count and advice to cast them away). None for other
    refusals (a time out of the stored unit's range among them)."""
    if not (pa.types.is_timestamp(got) and pa.types.is_timestamp(want)
            and _UNITS[got.unit] > _UNITS[want.unit] and "would lose data" in reason):
        return None
    raw = re.search(r"would lose data: (-?\d+)", reason)
    value = ""
    if raw is not None:
        try:
            value = f" ({pa.scalar(int(raw.group(1)), got).as_py()})"
        except (ValueError, OverflowError, pa.ArrowException):
            value = ""
    unit = {"s": "seconds", "ms": "milliseconds", "us": "microseconds"}[want.unit]
    typed = f"pa.timestamp({got.unit!r}" + (f", tz={got.tz!r})" if got.tz else ")")
    return (f"these times are finer than whole {unit}{value}, which {dataset!r} keeps: its "
            f"column took {want} from the first version's values (as a CSV's type is "
            f"inferred from what it holds). Casting this input to {want} would drop the "
            f"fraction; instead commit a new version with {name!r} as {got}, e.g. "
            f"import pyarrow as pa; t = "
            f"repo.dataset({dataset!r}).to_arrow(); repo.commit({dataset!r}, t.set_column("
            f"t.schema.get_field_index({name!r}), {name!r}, t[{name!r}].cast({typed}))), "
            "then append; or commit the first file as Parquet with the finer unit")
