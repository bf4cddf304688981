"""What kind of value a column holds, and a literal is, for where(); a number literal as the
value its column compares (:func:`as_column_number`), the same for every evaluator."""

from __future__ import annotations

import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.catalog.masks import compared_type
from dload_arrow.catalog.predicate import Literal, Node, WrittenFloat

__all__ = ["as_column_number", "column_kind", "duration_hint", "in_list", "literal_kind",
           "nearest_float32"]


def column_kind(typ: pa.DataType) -> str:
    """number, string, bool, temporal (a time with a text form) or other."""
    typ = compared_type(typ)
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "number"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "string"
    if pa.types.is_boolean(typ):
        return "bool"
    if pa.types.is_temporal(typ) and not (
            pa.types.is_duration(typ) or pa.types.is_interval(typ)):  # no text form to compare
        return "temporal"
    return "other"


def duration_hint(field: pa.Field) -> str:
    """How to filter on the duration column ``field``, which where() does not compare (QA
    timeseries64); '' for another column."""
    t = compared_type(field.type)
    if not pa.types.is_duration(t):
        return ""
    five = 5 * {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}.get(t.unit, 1)  # 5 s in its unit
    return (f"; a duration is compared in SQL, as a count of its unit ({t.unit}): "
            f"repo.sql(\"SELECT * FROM samples('NAME') WHERE {field.name} > {five}\"), or a "
            f"pipeline's .filter(lambda r: r[{field.name!r}] > datetime.timedelta(seconds=5))")


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def nearest_float32(node: Literal) -> Literal:
    """A number compared with a float32 column, as the float32 nearest it (what DuckDB's SQL
    does): ``x = 0.1`` keeps the rows given 0.1, ``x > 0.3`` does not keep those given 0.3.
    Compared in float64 with that value, every evaluator and pruning agree. A number beyond
    float32's range stays as it is (it is not infinity)."""
    v = float(node.value)
    return Literal(float(np.float32(v))) if abs(v) <= _FLOAT32_MAX else node


def literal_kind(value: Any) -> str:
    """null, bool, number or string."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, decimal.Decimal)):
        return "number"
    return "string"


def as_column_number(node: Literal, typ: pa.DataType, op: str = "=") -> Literal:
    """A number literal as the column of type ``typ`` compares it, the same in every
    evaluator (Arrow kernels, row masks, polars, pruning) and as DuckDB reads it: the float32
    nearest it for a float32 column, a float for a float64 one (an Arrow kernel refuses an
    integer beyond 2**53 against floats), a whole float as an int for an integer column
    (polars would compare it in float64: 2**53 + 1 equal to 2**53), and for a decimal column
    the exact decimal written (``12345678901234567.89``, which float64 rounds; a number with
    an exponent is a float there, as in DuckDB)."""
    v = node.value
    if pa.types.is_decimal(typ) and isinstance(v, (int, WrittenFloat)):  # as written
        return Literal(decimal.Decimal(v.text if isinstance(v, WrittenFloat) else v))
    if pa.types.is_float32(typ):
        if isinstance(v, float) and not isinstance(v, WrittenFloat):  # DuckDB's DOUBLE
            return _float32_bound(v, op)
        return nearest_float32(node)
    if pa.types.is_floating(typ) and isinstance(v, int):
        return Literal(float(v))
    if pa.types.is_integer(typ) and isinstance(v, float) and math.isfinite(v):
        exact = decimal.Decimal(v.text if isinstance(v, WrittenFloat) else v)
        if exact != exact.to_integral_value():  # 2.5, or 2**53 + 0.7 that float64 rounds
            return _integral_bound(exact, op)
        if -(2**63) <= exact < 2**64:
            return Literal(int(exact))
        # beyond every 64-bit integer, also once rounded to float64 (-2**63 - 1 written with
        # a point was -2**63 as a float: `i != -9223372036854775809.0` left out -2**63)
        return Literal(float(-(2**64)) if exact < 0 else float(2**65))
    return node


def _integral_bound(exact: decimal.Decimal, op: str) -> Literal:
    """``x <op> exact`` for an integer column as ``x <op> n`` (``x > 2.5`` is ``x > 2``,
    ``x < 2.5`` is ``x < 3``), from the literal as written: its float64 lost the fraction past
    2**53 (QA wherefuzz55: ``i < 9007199254740992.7`` left out 2**53). No integer equals it:
    ``=`` / ``!=`` compare with 0.5, which every evaluator keeps a fraction."""
    if op in ("=", "!="):
        return Literal(0.5)
    rounding = decimal.ROUND_FLOOR if op in (">", "<=") else decimal.ROUND_CEILING
    bound = int(exact.to_integral_value(rounding=rounding))
    if -(2**63) <= bound < 2**64:
        return Literal(bound)
    return Literal(float(-(2**64)) if bound < 0 else float(2**65))  # beyond, once a float too


def _float32_bound(v: float, op: str) -> Literal:
    """``x <op> v`` for a float32 column ``x`` and a literal with an exponent (``1e-5``),
    which DuckDB reads as a DOUBLE and compares exactly: ``x >= 1e-5`` leaves out the float32
    nearest 1e-5 (just below it), and ``x = 1e-300`` holds for no row, where rounding the
    literal to float32 made it 0 (QA wherefuzz55). The float32 bound on the right side of
    ``v`` for ``op``, compared in float64 as every evaluator compares; ``=``, ``!=`` keep
    ``v`` itself, which no float32 equals unless it is one."""
    with np.errstate(over="ignore"):  # beyond float32's range: compared as it is
        f = np.float32(v)
    if not np.isfinite(f) or float(f) == v or op in ("=", "!="):
        return Literal(float(f)) if np.isfinite(f) and float(f) == v else Literal(v)
    if op in (">", "<="):  # the largest float32 below v
        bound = f if float(f) < v else np.nextafter(f, np.float32(-np.inf))
    else:  # the smallest float32 above v
        bound = f if float(f) > v else np.nextafter(f, np.float32(np.inf))
    return Literal(float(bound))


def in_list(values: tuple[Node, ...], typ: pa.DataType) -> tuple[Node, ...]:
    """The literals of ``x IN (...)`` as DuckDB types them: one type for the list, so a
    literal with an exponent against a float32 column makes every number in it a DOUBLE
    (``x IN (0.3, 1e10)`` holds for no float32 0.3)."""
    if not pa.types.is_float32(compared_type(typ)) or not any(
            isinstance(n, Literal) and type(n.value) is float for n in values):
        return values
    return tuple(Literal(float(n.value)) if isinstance(n, Literal) and isinstance(
        n.value, WrittenFloat) else n for n in values)
