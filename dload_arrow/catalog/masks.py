"""A checked filter tree evaluated into a boolean row mask with Arrow compute kernels.

:func:`row_mask` gives the mask function of a :class:`~dload_arrow.rowfilter.RowFilter`: the
same test as the Arrow expression that :mod:`dload_arrow.catalog.filtering` builds from the
tree, computed column by column (``pc.equal``, ``pc.and_kleene``...) instead of through an
Acero plan. AND, OR and NOT follow SQL's three-valued logic (Kleene's), a comparison with
NULL is null for every row, and a null mask entry drops the row, as in the expression.
tests/test_where.py checks that both give the same rows.
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import scalar
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

__all__ = ["row_mask"]

_KERNELS = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
            ">": pc.greater, ">=": pc.greater_equal}


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


def _value(node: Node, data: pa.RecordBatch | pa.Table) -> Any:
    if isinstance(node, Column):
        return _column(node.name, data)
    assert isinstance(node, Literal)
    return scalar(node.value)


def _like(value: pa.Scalar, t: pa.DataType) -> pa.Scalar:
    """An integer literal as the integer column's type when it fits: an int64 literal
    against a uint64 column would make Arrow cast the column to int64 (and fail above
    2**63 - 1); otherwise the literal as it is (the kernels then find a common type)."""
    if pa.types.is_integer(t) and pa.types.is_integer(value.type):
        try:
            return value.cast(t)
        except (pa.ArrowInvalid, OverflowError):
            return value
    return value


def _eval(node: Node, data: pa.RecordBatch | pa.Table) -> Any:
    if isinstance(node, Literal):
        return scalar(node.value)
    if isinstance(node, Compare):
        if any(isinstance(s, Literal) and s.value is None for s in (node.left, node.right)):
            return scalar(None)  # x = NULL is unknown for every row, as in SQL
        left, right = _value(node.left, data), _value(node.right, data)
        if isinstance(right, pa.Scalar) and not isinstance(left, pa.Scalar):
            right = _like(right, left.type)
        return _KERNELS[node.op](left, right)
    if isinstance(node, IsNull):
        assert isinstance(node.operand, Column)
        nulls = pc.is_null(_column(node.operand.name, data))
        return pc.invert(nulls) if node.negated else nulls
    if isinstance(node, In):
        found = functools.reduce(pc.or_kleene, (_eval(Compare("=", node.operand, v), data)
                                                for v in node.values))
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
