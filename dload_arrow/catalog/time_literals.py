"""Time literals of ``where()``: ISO text compared exactly with time columns.

A string compared with a timestamp column is read at any precision (``'...00.123456789'``
against a ``timestamp[ms]`` column, ``'...00.000'`` against ``timestamp[s]``), as the whole
seconds Arrow parses plus the fractional digits as an exact fraction, and becomes a count of
the column's unit since the epoch (:attr:`~dload_arrow.catalog.predicate.Literal.ticks`):
every evaluator (compute kernels, the Arrow expression, row-group pruning) compares that
integer in the column's own type, so nanoseconds are kept and nothing is rounded. A literal
between two values of the unit is rewritten to the comparison it is equal to
(:func:`time_compare`): ``x < 1.5 ms`` is ``x <= 1 ms``, and ``x = 1.5 ms`` matches no row.

A time-of-day column takes the same path, in units of its type after midnight: the literal is
read as DuckDB reads it against that column, to the nanosecond for ``time64[ns]`` (DuckDB's
TIME_NS) and to the microsecond for the others (its TIME; further digits are dropped), so a
``time64[ns]`` column keeps its nanoseconds where a ``datetime.time`` would lose them.
Date columns still take the literal through Arrow's cast to their type.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import pylist, string_array
from dload_arrow.catalog.masks import compared_type, time_array
from dload_arrow.catalog.predicate import And, Column, Compare, Literal, Node, Or

__all__ = ["naive_time", "time_compare", "time_value"]

Error = Callable[[str], Exception]

# A time of day followed by a zone: Z, +HH, +HHMM or +HH:MM.
_ZONE = re.compile(r"[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)$")
_FRACTION = re.compile(r"(?<=[T ]\d{2}:\d{2}:\d{2})\.(?P<digits>\d+)")
# The zone a time of day may end with in dt.time.fromisoformat: Z, +HH, +HHMM, +HH:MM[:SS[.f]].
_DAY_ZONE = re.compile(r"(?:Z|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:\.\d+)?)?)?)$", re.IGNORECASE)
_DAY_FRACTION = re.compile(r"[.,](?P<digits>\d+)")  # the only '.' or ',' of an ISO time
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_INT64 = (-(2**63), 2**63 - 1)
_HINT = "write an ISO time, e.g. '2024-01-21' or '2024-01-21T10:30:00Z'"


def time_compare(op: str, col: Column, text: str, field: pa.Field, error: Error) -> Node:
    """``col <op> 'text'`` for a timestamp or time-of-day column, as exact comparisons in
    its unit."""
    typ = compared_type(field.type)
    if pa.types.is_time(typ):  # a time of day holds less than a day (Arrow's format says so)
        ticks, exact = _day_ticks(text, typ, field, error)
        lo, hi = 0, 86400 * _PER_SECOND[typ.unit] - 1
    else:
        ticks, exact = _ticks(naive_time(text, field, error), typ, field, error)
        lo, hi = _INT64
    below, above = ticks < lo, ticks > hi or (ticks == hi and not exact)
    if below or above:  # beyond every value the column can hold
        holds = op == "!=" or op in ((">", ">=") if below else ("<", "<="))
        return Compare("=" if holds else "!=", col, col)  # true / false, null where null
    if exact:
        return Compare(op, col, _literal(ticks, typ))
    low, high = _literal(ticks, typ), _literal(ticks + 1, typ)  # the values around it
    if op == "=":  # never equal: false, and null for a null
        return And(Compare(">", col, low), Compare("<", col, high))
    if op == "!=":
        return Or(Compare("<=", col, low), Compare(">=", col, high))
    return Compare("<=" if op in ("<", "<=") else ">", col, low)


def _ticks(text: str, typ: pa.DataType, field: pa.Field, error: Error) -> tuple[int, bool]:
    """The time ``text`` in units of ``typ`` after the epoch (floored), and whether exact.

    Without an offset the text is a wall time, by convention UTC (also against a column with
    a zone); with one, that instant.
    """
    m = _FRACTION.search(text)
    whole = text if m is None else text[: m.start()] + text[m.end():]
    zone = "UTC" if _ZONE.search(text) is not None else None
    try:
        seconds = pylist(string_array([whole]).cast(pa.timestamp("s", zone)).cast(pa.int64()))[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        why = str(e).replace(" as a scalar of type timestamp[s]", "")  # our cast, not theirs
        raise error(f"{text!r} is not a {typ} value for column {field.name!r} ({why}); "
                    f"{_HINT}") from e
    per = _PER_SECOND[typ.unit]
    value = seconds * per + (0 if m is None else Fraction(int(m["digits"]) * per,
                                                          10 ** len(m["digits"])))
    return int(value // 1), value == int(value // 1)


def _day_ticks(text: str, typ: pa.DataType, field: pa.Field, error: Error) -> tuple[int, bool]:
    """The time of day ``text`` in units of the time type ``typ`` after midnight (floored),
    and whether exact; read to the nanosecond for ``time64[ns]``, else to the microsecond."""
    try:
        t = dt.time.fromisoformat(text)  # checks the text (it keeps microseconds only)
    except ValueError as e:
        fraction = "fffffffff" if typ.unit == "ns" else "ffffff"
        raise error(f"{text!r} is not a time of day for column {field.name!r} ({typ}): "
                    f"write 'HH:MM', 'HH:MM:SS' or 'HH:MM:SS.{fraction}'") from e
    if t.tzinfo is not None:  # a time of day has no zone to convert to (DuckDB's TIME drops or
        # refuses the offset): refused, not silently read as the wall time before it
        m = _DAY_ZONE.search(text)
        plain = "" if m is None else f" (e.g. {text[: m.start()]!r})"
        raise error(f"{text!r} has a zone offset, and column {field.name!r} ({typ}) holds times "
                    f"of day without a zone; write the time without an offset{plain}")
    m = _DAY_FRACTION.search(text)
    kept = 9 if typ.unit == "ns" else 6
    nanos = t.microsecond * 1000 if m is None else int(m["digits"][:kept].ljust(9, "0"))
    total = ((t.hour * 60 + t.minute) * 60 + t.second) * 10**9 + nanos
    value = Fraction(total * _PER_SECOND[typ.unit], 10**9)
    return int(value // 1), value == int(value // 1)


def _literal(ticks: int, typ: pa.DataType) -> Literal:
    """A literal of ``ticks`` units of ``typ``; its value is a datetime (or time), or a numpy
    datetime64 where a datetime cannot hold it (nanoseconds). polars compares that value
    against a column without a zone; a zoned one compares UTC ticks
    (``polars_view._utc_literal``), and a time of day its ticks (a time stops at microseconds)."""
    if pa.types.is_time(typ):
        return Literal(pylist(time_array(ticks, typ))[0], ticks, typ)
    value: Any = np.datetime64(ticks, typ.unit)
    if typ.unit != "ns":
        with contextlib.suppress(ValueError, OverflowError):  # beyond years 1-9999
            value = pylist(time_array(ticks, typ))[0]
    elif typ.tz is not None:  # polars compares a zoned column with a zoned datetime only
        value = pylist(time_array(ticks // 1000, pa.timestamp("us", typ.tz)))[0]
    return Literal(value, ticks, typ)


def time_value(text: str, field: pa.Field, error: Error) -> Any:
    """The value of the time literal ``text`` compared with the date column ``field``
    (timestamps and times of day go through :func:`time_compare`)."""
    typ = compared_type(field.type)
    try:
        return pylist(string_array([text]).cast(typ))[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        hint = "write a date, e.g. '2024-01-21'" if pa.types.is_date(typ) else _HINT
        raise error(f"{text!r} is not a {typ} value for column {field.name!r} ({e}); "
                    f"{hint}") from e


def naive_time(text: str, field: pa.Field, error: Error) -> str:
    """``text`` without its zone when it is UTC and the column has no zone.

    A column without a zone holds wall times, by convention UTC: a UTC time
    (``...Z``, ``+00:00``) compares as that wall time; another offset is refused, with
    the UTC time to write instead.
    """
    m = _ZONE.search(text)
    typ = compared_type(field.type)
    if m is None or not pa.types.is_timestamp(typ) or typ.tz is not None:
        return text
    zone = m.group("zone")
    if zone == "Z" or zone.lstrip("+-").replace(":", "").strip("0") == "":
        return text[: m.start("zone")]
    try:
        utc = dt.datetime.fromisoformat(text).astimezone(dt.UTC)
        hint = f" (here {utc.replace(tzinfo=None).isoformat()!r})"
    except ValueError:
        hint = ""
    raise error(
        f"{text!r} has the zone offset {zone}, and column {field.name!r} is "
        f"{field.type} without a zone (wall times, by convention UTC); write the time in "
        f"UTC, without an offset or with Z{hint}"
    )
