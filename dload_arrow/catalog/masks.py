"""A checked filter tree evaluated into a boolean row mask with Arrow compute kernels.

:func:`row_mask` gives the mask function of a :class:`~dload_arrow.rowfilter.RowFilter`: the
same test as the Arrow expression that :mod:`dload_arrow.catalog.filtering` builds from the
tree, computed column by column (``pc.equal``, ``pc.and_kleene``...) instead of through an
Acero plan. AND, OR and NOT follow SQL's three-valued logic (Kleene's), a comparison with
NULL is null for every row, and a null mask entry drops the row, as in the expression.
tests/test_where.py checks that both give the same rows.

Compare kernels see every column as :func:`compared_type` gives it: a dictionary column
(pandas or polars Categorical) by its value type, a half-float column as float32 (Arrow has no
comparison kernel for float16; the cast is exact). Two number columns compare as DuckDB
compares them (:mod:`dload_arrow.catalog.column_pairs`).
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import scalar
from dload_arrow.catalog.column_pairs import KERNELS, compare_columns
from dload_arrow.catalog.in_lists import value_set
from dload_arrow.catalog.predicate import (
    And,
    Between,
    Column,
    Compare,
    In,
    IsNull,
    Literal,
    Node,
    Not,
    Or,
)
from dload_arrow.rowfilter import Mask

__all__ = ["compared_type", "row_mask", "time_array", "time_scalar"]

_KERNELS = KERNELS


def compared_type(typ: pa.DataType) -> pa.DataType:
    """The type a column of type ``typ`` is compared as (see the module docstring)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return pa.float32() if pa.types.is_float16(typ) else typ


def time_array(ticks: int, typ: pa.DataType) -> pa.Array:
    """The time ``ticks`` units of the timestamp or time-of-day type ``typ`` after the epoch
    (or midnight), as a one-value array of ``typ`` (a time literal's :attr:`~Literal.ticks`)."""
    data = np.asarray([ticks], np.int32 if typ.bit_width == 32 else np.int64)
    return pa.Array.from_buffers(typ, 1, [None, pa.py_buffer(data)])


def time_scalar(ticks: int, typ: pa.DataType) -> pa.Scalar:
    """:func:`time_array`'s value as a scalar."""
    return time_array(ticks, typ)[0]


def row_mask(node: Node) -> Mask:
    """The mask function of a checked filter tree (see the module docstring)."""
    return _TreeMask(node)


class _TreeMask:
    """A filter tree's mask function; an object, so that a filtered view pickles (spawned
    DataLoader workers receive it)."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node

    def __call__(self, data: pa.RecordBatch | pa.Table) -> pa.Array | pa.ChunkedArray:
        out = _eval(self.node, data)
        return pa.repeat(out, data.num_rows) if isinstance(out, pa.Scalar) else out


def _column(name: str, data: pa.RecordBatch | pa.Table) -> Any:
    i = data.schema.get_field_index(name)
    if i < 0:  # the reader then decodes every column (as for Arrow's expression filter)
        raise pa.ArrowInvalid(f"No match for FieldRef.Name({name}) in {data.schema}")
    return data.column(i)


def _compared(name: str, data: pa.RecordBatch | pa.Table) -> Any:
    """A column as compare kernels take it: decoded, half floats widened."""
    col = _column(name, data)
    typ = compared_type(col.type)
    return col if typ == col.type else col.cast(typ)


def _value(node: Node, data: pa.RecordBatch | pa.Table) -> Any:
    if isinstance(node, Column):
        return _compared(node.name, data)
    assert isinstance(node, Literal)
    return scalar(node.value)


_NULL = scalar(None)  # a null boolean
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_BEYOND = 2**200  # an integer outside every integer column's range


def _compare(op: str, column: Any, v: Any) -> Any:
    """``column <op> v`` for a column and a literal's value ``v`` (not None).

    An integer column compared with a literal of another type would make Arrow cast the
    column to a common type: a uint64 column to int64 for ``u > -1`` (failing above
    2**63 - 1), an integer column to float64 for ``n > 1.5`` (failing above 2**53). Here the
    literal becomes an integer of the column's type instead (``n > 1.5`` is ``n > 1``), and
    a literal beyond the type's range gives every non-null row the same answer.
    """
    t = column.type
    if pa.types.is_decimal(t) and isinstance(v, decimal.Decimal) and v.is_finite():
        return compare_decimal(op, column, t, v)
    if pa.types.is_integer(t) and isinstance(v, float) and not math.isnan(v):
        op, v = _integral(op, v)
    if not pa.types.is_integer(t) or not isinstance(v, int) or isinstance(v, bool):
        return _KERNELS[op](column, scalar(v))
    bits = t.bit_width
    lo, hi = (0, 2**bits - 1) if pa.types.is_unsigned_integer(t) else (
        -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if lo <= v <= hi:
        return _KERNELS[op](column, scalar(v).cast(t))
    holds = op in (("<", "<=", "!=") if v > hi else (">", ">=", "!="))
    # true (or false) for every row, null where the column is null, as SQL says
    return pc.equal(column, column) if holds else pc.not_equal(column, column)


def compare_decimal(op: str, column: Any, t: pa.DataType, v: decimal.Decimal) -> Any:
    """``column <op> v`` for a decimal column (an array or an Arrow expression) of type ``t``
    and an exact literal (:func:`decimal_operand`)."""
    got = decimal_operand(op, t, v)
    if isinstance(got, bool):  # every non-null row the same answer, null where null
        return pc.equal(column, column) if got else pc.not_equal(column, column)
    return _KERNELS[got[0]](column, pa.scalar(got[1], type=t))


def decimal_literal(node: Compare, type_of: Callable[[str], pa.DataType]
                    ) -> tuple[pa.DataType, decimal.Decimal] | None:
    """(the column's type, the literal) when ``node`` compares a decimal column with a finite
    decimal literal (``type_of``: a column's compared type), else None."""
    left, right = node.left, node.right
    if (isinstance(left, Column) and isinstance(right, Literal)
            and isinstance(right.value, decimal.Decimal) and right.value.is_finite()):
        t = type_of(left.name)
        return (t, right.value) if pa.types.is_decimal(t) else None
    return None


def decimal_operand(op: str, t: pa.DataType, v: decimal.Decimal
                    ) -> tuple[str, decimal.Decimal] | bool:
    """``x <op> v`` for ``x`` of decimal type ``t`` as ``x <op'> q`` with ``q`` a value of
    ``t``, or the answer of every row (True/False). Arrow's common type of the two needs
    their digits together, and past 38 the kernel failed mid-read (``5.549999999999999999999``
    against ``decimal128(20, 2)``, QA sql 42). A value of ``t`` is a multiple of its last
    digit, so with ``q`` the literal rounded down to it, ``x > v`` is ``x > q`` and ``x < v``
    is ``x <= q`` when ``v`` has a finer part; a literal beyond ``t``'s digits gives every row
    the same answer."""
    ulp = decimal.Decimal(1).scaleb(-t.scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 200  # exact for any literal the parser takes
        q = v.quantize(ulp, rounding=decimal.ROUND_FLOOR)
        top = decimal.Decimal(10) ** (t.precision - t.scale) - ulp  # the largest value held
        inside = -top <= q <= top  # (exact: in the wide context, as -top is)
    if q != v:  # between two values of the column
        if op in ("=", "!="):
            return op == "!="
        op = {">": ">", ">=": ">", "<": "<=", "<=": "<="}[op]
    if inside:
        return op, q
    return op in (("<", "<=", "!=") if q > top else (">", ">=", "!="))


def _integral(op: str, v: float) -> tuple[str, int]:
    """``x <op> v`` for a float ``v`` as ``x <op'> n`` for an integer ``n`` (x an integer)."""
    if math.isinf(v):
        return op, _BEYOND if v > 0 else -_BEYOND
    if v == int(v):
        return op, int(v)
    if op in ("=", "!="):
        return op, _BEYOND  # never equal
    return op, math.floor(v) if op in (">", "<=") else math.ceil(v)


def _in(node: In, data: pa.RecordBatch | pa.Table) -> Any:
    """``x IN (...)`` as one ``pc.is_in`` (:mod:`dload_arrow.catalog.in_lists`)."""
    assert isinstance(node.operand, Column)
    column = _compared(node.operand.name, data)
    values = value_set(node, column.type)
    if values is None:  # a type the value set does not cover: one equality per value
        return functools.reduce(pc.or_kleene, (_eval(Compare("=", node.operand, v), data)
                                               for v in node.values))
    if column.type != values.type:
        column = column.cast(values.type)
    found = pc.if_else(pc.is_null(column), _NULL, pc.is_in(column, value_set=values.array))
    return pc.or_kleene(found, _NULL) if values.has_null else found


def _eval(node: Node, data: pa.RecordBatch | pa.Table) -> Any:
    if isinstance(node, Literal):
        return scalar(node.value)
    if isinstance(node, Compare):
        if any(isinstance(s, Literal) and s.value is None for s in (node.left, node.right)):
            return scalar(None)  # x = NULL is unknown for every row, as in SQL
        if isinstance(node.left, Column) and isinstance(node.right, Literal):
            column = _compared(node.left.name, data)
            if node.right.ticks is not None:  # a time, exact in the column's unit
                return _KERNELS[node.op](column, time_scalar(node.right.ticks,
                                                             node.right.time_type))
            return _compare(node.op, column, node.right.value)
        if isinstance(node.left, Literal) and isinstance(node.right, Column):
            return _compare(_FLIPPED[node.op], _compared(node.right.name, data),
                            node.left.value)
        if isinstance(node.left, Column) and isinstance(node.right, Column):
            left, right = _value(node.left, data), _value(node.right, data)
            return compare_columns(node.op, left, left.type, right, right.type)
        return _KERNELS[node.op](_value(node.left, data), _value(node.right, data))
    if isinstance(node, IsNull):
        assert isinstance(node.operand, Column)
        nulls = pc.is_null(_column(node.operand.name, data))
        return pc.invert(nulls) if node.negated else nulls
    if isinstance(node, In):
        found = _in(node, data)
        return pc.invert(found) if node.negated else found
    if isinstance(node, Between):
        inside = pc.and_kleene(_eval(Compare(">=", node.operand, node.low), data),
                               _eval(Compare("<=", node.operand, node.high), data))
        return pc.invert(inside) if node.negated else inside
    if isinstance(node, And):
        return pc.and_kleene(_eval(node.left, data), _eval(node.right, data))
    if isinstance(node, Or):
        return pc.or_kleene(_eval(node.left, data), _eval(node.right, data))
    if isinstance(node, Not):
        return pc.invert(_eval(node.operand, data))
    raise TypeError(node)
