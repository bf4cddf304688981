"""Two number columns compared in ``where()`` (``i > f``, ``u = i``), as DuckDB compares them.

Arrow's comparison kernels cast both sides to a common type with a checked cast, so a pair
whose values do not fit it failed on the data, not on the filter: int64 against float64
above 2**53 ("Integer value 9007199254740993 not in range"), uint64 against int64 (or
int32) above 2**63 - 1. DuckDB's SQL over ``samples()`` answers both, and so does
:func:`compare_columns`, for the compute-kernel mask and the Arrow expression alike (the
``pc`` functions take arrays and expressions):

* an integer (or decimal) and a float column compare in the float's type, the integer
  rounded to the nearest float (DuckDB's ``CAST(i AS DOUBLE)``, or ``FLOAT`` against a
  float32 column);
* a signed and an unsigned integer column compare exactly: a negative value is below every
  unsigned one, and the rest compare as uint64 (DuckDB goes through HUGEINT);
* a decimal and an integer or decimal column whose common decimal needs more than 38 digits
  (decimal(38, 30) against int64) compare exactly as decimal256, where DuckDB's cast fails;
  beyond 76 digits, :func:`uncomparable` says why, and the filter is refused.

Other pairs go to the kernels as they are (their common type holds both sides).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["KERNELS", "compare_columns", "uncomparable"]

KERNELS = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
           ">": pc.greater, ">=": pc.greater_equal}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def compare_columns(op: str, left: Any, left_type: pa.DataType, right: Any,
                    right_type: pa.DataType) -> Any:
    """``left <op> right`` for two columns (arrays or Arrow expressions) of the compared
    types ``left_type`` and ``right_type``."""
    if pa.types.is_integer(left_type) and pa.types.is_integer(right_type) and (
            pa.types.is_unsigned_integer(left_type) != pa.types.is_unsigned_integer(right_type)):
        if pa.types.is_unsigned_integer(left_type):
            return _signed_unsigned(_FLIPPED[op], right, right_type, left)
        return _signed_unsigned(op, left, left_type, right)
    wide = _wide_decimal(left_type, right_type)
    if wide is not None:
        return KERNELS[op](_exact(left, wide), _exact(right, wide))
    if pa.types.is_floating(right_type) and not pa.types.is_floating(left_type):
        left = _rounded(left, left_type, right_type)
    elif pa.types.is_floating(left_type) and not pa.types.is_floating(right_type):
        right = _rounded(right, right_type, left_type)
    return KERNELS[op](left, right)


def uncomparable(left_type: pa.DataType, right_type: pa.DataType) -> str | None:
    """Why two number columns cannot be compared exactly (None: they can): a decimal pair
    whose common decimal needs more than the 76 digits of decimal256."""
    digits = _common_digits(left_type, right_type)
    if digits is None or digits[0] <= 76:
        return None
    return (f"comparing them exactly needs a decimal of {digits[0]} digits ({digits[1]} after "
            "the point), more than decimal256's 76")


def _common_digits(a: pa.DataType, b: pa.DataType) -> tuple[int, int] | None:
    """The precision and scale of the decimal that holds every value of ``a`` and ``b``
    when one is a decimal and the other a decimal or an integer; None otherwise."""
    if not (pa.types.is_decimal(a) or pa.types.is_decimal(b)):
        return None
    sides = [_decimal_digits(t) for t in (a, b)]
    if None in sides:
        return None
    (a_int, a_scale), (b_int, b_scale) = sides  # type: ignore[misc]
    scale = max(a_scale, b_scale)
    return max(a_int, b_int) + scale, scale


def _decimal_digits(t: pa.DataType) -> tuple[int, int] | None:
    """(digits before the point, digits after) of a decimal or integer type."""
    if pa.types.is_decimal(t):
        return t.precision - t.scale, t.scale
    if pa.types.is_integer(t):
        bits = t.bit_width if pa.types.is_unsigned_integer(t) else t.bit_width - 1
        return len(str(2**bits)), 0
    return None


def _wide_decimal(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The decimal256 two columns compare in where Arrow's common decimal would need more
    than 38 digits (it fails: "Decimal precision out of range [1, 38]: 49"; DuckDB too)."""
    digits = _common_digits(a, b)
    if digits is None or digits[0] <= 38 or digits[0] > 76:
        return None
    return pa.decimal256(*digits)


def _rounded(column: Any, typ: pa.DataType, to: pa.DataType) -> Any:
    """An integer or decimal column as the float type ``to``, each value the nearest float:
    Arrow's checked cast refuses an integer the float cannot hold exactly, and its decimal
    cast is not correctly rounded (9007199254740993.5 became 2**53), so a decimal goes
    through its exact text."""
    expression = isinstance(column, pc.Expression)
    if pa.types.is_decimal(typ):
        column = column.cast(pa.string()) if expression else pc.cast(column, pa.string())
    return column.cast(to, safe=False) if expression else pc.cast(column, to, safe=False)


def _signed_unsigned(op: str, signed: Any, signed_type: pa.DataType, unsigned: Any) -> Any:
    """``signed <op> unsigned``, exact: a negative value is below every unsigned one (true
    for <, <= and !=, null where the unsigned side is null), the others compare as uint64."""
    negative = pc.less(signed, pa.scalar(0, signed_type))
    at_least_zero = pc.if_else(negative, pa.scalar(0, signed_type), signed)
    compared = KERNELS[op](_exact(at_least_zero, pa.uint64()), _exact(unsigned, pa.uint64()))
    # true (or false) for every row, null where the unsigned side is null
    below = (pc.equal(unsigned, unsigned) if op in ("<", "<=", "!=")
             else pc.not_equal(unsigned, unsigned))
    return pc.if_else(negative, below, compared)


def _exact(column: Any, typ: pa.DataType) -> Any:
    if isinstance(column, pc.Expression):
        return column.cast(typ)
    return pc.cast(column, typ)
