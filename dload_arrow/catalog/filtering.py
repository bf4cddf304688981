"""Filters on a dataset: a parsed predicate becomes an Arrow expression and a pruned unit list.

:func:`compile_filter` checks a predicate against the schema and builds the Arrow expression;
:func:`~dload_arrow.catalog.pruning.prune_units` (re-exported here) keeps the row groups where
a row may pass, from the manifest's per-row-group statistics.

Columns compare as :func:`~dload_arrow.catalog.masks.compared_type` gives them: a dictionary
column (pandas or polars Categorical) by its value type, which also types its literals (the
manifest has no statistics for it, so it prunes nothing), and float16 as float32; a number
compared with a float32 column is read as the float32 nearest it, as DuckDB reads it. A string
compared with a time column is read as a time: exactly, against a timestamp or time-of-day
column (:mod:`~dload_arrow.catalog.time_literals`, which also rewrites its IN and BETWEEN). A
comparison of two values is answered here when of one kind (``1 = 1``), else refused
(``true = 3``: likely a column named ``true``, unquoted). Durations are not compared."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import scalar
from dload_arrow.catalog import literal_kinds
from dload_arrow.catalog.column_pairs import compare_columns, uncomparable
from dload_arrow.catalog.in_lists import value_set
from dload_arrow.catalog.literal_kinds import as_column_number, column_kind, in_list, literal_kind
from dload_arrow.catalog.masks import (
    compare_decimal,
    compared_type,
    decimal_literal,
    row_mask,
    time_scalar,
)
from dload_arrow.catalog.name_hints import column_hint, literal_compare_hint, quoted, sql_literal
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
    flip,
    parse_predicate,
)
from dload_arrow.catalog.pruning import prune_units
from dload_arrow.catalog.time_literals import time_compare, time_value
from dload_arrow.errors import PredicateError, column_list
from dload_arrow.rowfilter import RowFilter

__all__ = ["CompiledFilter", "compile_filter", "prune_units"]

_OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}
_NULL_BOOL = scalar(None)  # built from buffers: pa.scalar() imports pandas


@dataclass(frozen=True)
class CompiledFilter:
    """A validated filter: text, tree (literals typed), Arrow expression and row filter."""

    text: str
    node: Node
    expression: pc.Expression

    @property
    def row_filter(self) -> RowFilter:
        return RowFilter(self.expression, row_mask(self.node))


class _Compiler:
    def __init__(self, schema: pa.Schema, text: str) -> None:
        self.schema = schema
        self.text = text

    def error(self, what: str) -> PredicateError:
        return PredicateError(f"filter {self.text!r}: {what}")

    def column(self, name: str) -> pa.Field:
        idx = self.schema.get_field_index(name)
        if idx < 0:
            raise self.error(f"no column {name!r}; {column_list(self.schema.names, name)}"
                             f"{column_hint(name, self.schema, self.text)}")
        return self.schema.field(idx)

    def typed(self, node: Node, other: Node | None, op: str = "=") -> Node:
        """Check operand types; cast string literals compared with time columns."""
        if not isinstance(node, Literal) or not isinstance(other, Column):
            return node
        field, value = self.column(other.name), node.value
        typ = compared_type(field.type)  # a decimal column holds any integer: compared exactly
        if isinstance(value, int) and not isinstance(value, bool) and not (
                -(2**63) <= value < 2**64) and not pa.types.is_decimal(typ):
            raise self.error(f"{value} does not fit in 64 bits (no column holds it); use a "
                             f"float literal ({float(value):g}) to compare by magnitude")
        kind, lit = column_kind(field.type), literal_kind(value)
        node = as_column_number(node, typ, op) if lit == "number" else node
        if lit == "null" or kind == lit:
            return node
        if kind == "temporal" and lit == "string":
            return Literal(time_value(node.value, field, self.error))
        raise self.error(
            f"column {field.name!r} is {field.type} and cannot be compared with {node.value!r}"
            + ("; where() compares scalar columns (numbers, strings, bools, times), and "
               "tests any column with IS NULL" if kind == "other" else "")
        )

    def node(self, node: Node) -> Node:
        if isinstance(node, Column):
            field = self.column(node.name)
            if not pa.types.is_boolean(compared_type(field.type)):
                raise self.error(f"column {node.name!r} is {field.type}; compare it, e.g. "
                                 f"{node.name} = ...")
            return Compare("=", node, Literal(True))
        if isinstance(node, Literal):
            if not isinstance(node.value, bool) and node.value is not None:
                raise self.error(f"{node.value!r} alone is not a condition")
            return node
        if isinstance(node, Compare):
            left, right = node.left, node.right
            if isinstance(left, Literal) and isinstance(right, Column):
                left, right, op = right, left, flip(node.op)
            else:
                op = node.op
            for side in (left, right):
                if isinstance(side, Column):
                    self.operand_column(side)
            if isinstance(left, Column) and isinstance(right, Column):
                a, b = self.column(left.name), self.column(right.name)
                if column_kind(a.type) != column_kind(b.type):
                    raise self.error(f"columns {a.name!r} ({a.type}) and {b.name!r} ({b.type}) "
                                     "cannot be compared")
                why = uncomparable(compared_type(a.type), compared_type(b.type))
                if why is not None:
                    raise self.error(f"columns {a.name!r} ({a.type}) and {b.name!r} ({b.type}): "
                                     f"{why}; compare each with a value, or read them with "
                                     "to_arrow(columns=[...]) and compare them there")
            if not isinstance(left, (Column, Literal)) or not isinstance(right, (Column, Literal)):
                raise self.error("comparisons take columns and values, not conditions")
            if isinstance(left, Literal) and isinstance(right, Literal):
                return self.constant(op, left.value, right.value)
            if (isinstance(left, Column) and self.timed(left)
                    and isinstance(right, Literal) and isinstance(right.value, str)):
                return time_compare(op, left, right.value, self.column(left.name), self.error)
            return Compare(op, left, self.typed(right, left, op))
        if isinstance(node, IsNull):
            if not isinstance(node.operand, Column):
                raise self.not_column(node.operand, "IS NULL applies to a column")
            self.column(node.operand.name)
            return node
        if isinstance(node, In | Between) and self.timed(self.operand(node.operand)):
            return self.node(_compares(node))  # each literal read exactly (time_literals)
        if isinstance(node, In):
            col = self.operand(node.operand)
            vals = in_list(node.values, self.column(col.name).type)  # DuckDB's one type
            return In(col, tuple(self.typed(v, col) for v in vals), node.negated)  # type: ignore
        if isinstance(node, Between):
            col = self.operand(node.operand)
            return Between(col, self.typed(node.low, col, ">="), self.typed(node.high, col, "<="),
                           node.negated)
        if isinstance(node, And):
            return And(self.node(node.left), self.node(node.right))
        if isinstance(node, Or):
            return Or(self.node(node.left), self.node(node.right))
        if isinstance(node, Not):
            return Not(self.node(node.operand))
        raise self.error(f"unsupported part {node!r}")

    def constant(self, op: str, a: Any, b: Any) -> Literal:
        """``a <op> b`` for two values: its answer if they are of one kind (``1 = 1``), else
        refused here (Arrow has no kernel for ``TRUE = 3``; the read would fail)."""
        if a is None or b is None:  # NULL = 3: unknown, as in SQL, unless "null" is a column
            if "null" in (n.lower() for n in self.schema.names):
                raise self.error(literal_compare_hint(a, op, b, self.schema.names))
            return Literal(None)
        if literal_kind(a) != literal_kind(b):
            raise self.error(literal_compare_hint(a, op, b, self.schema.names))
        return Literal(bool(_OPS[op](a, b)))

    def timed(self, node: Node) -> bool:
        """A timestamp or time-of-day column: its literals become exact ticks."""
        typ = compared_type(self.column(node.name).type) if isinstance(node, Column) else None
        return typ is not None and (pa.types.is_timestamp(typ) or pa.types.is_time(typ))

    def operand(self, node: Node) -> Column:
        if not isinstance(node, Column):
            raise self.not_column(node, "IN and BETWEEN apply to a column")
        self.operand_column(node)
        return node

    def not_column(self, node: Node, what: str) -> PredicateError:
        """The error of a value where a column is due, with the quoting that names a column
        called like that value (``null IS NULL``: ``"null" IS NULL``)."""
        if isinstance(node, Literal):
            word = sql_literal(node.value)
            named = sorted(c for c in self.schema.names if c.upper() == word.upper())
            if named:
                what += (f"; if you meant the column {named[0]!r}, double-quote it: "
                         f"{quoted(named[0])}")
        return self.error(what)

    def operand_column(self, col: Column) -> None:
        field = self.column(col.name)
        if column_kind(field.type) == "other":
            raise self.error(f"column {col.name!r} is {field.type}; where() compares scalar "
                             "columns (numbers, strings, bools, times); test it with IS NULL"
                             + literal_kinds.duration_hint(field))


def _compares(node: In | Between) -> Node:
    """``x [NOT] IN (...)`` or ``x [NOT] BETWEEN a AND b`` as the comparisons it means (the
    same under SQL's NULL rules)."""
    if isinstance(node, In):
        parts: list[Node] = [Compare("=", node.operand, v) for v in node.values]
        e: Node = _balanced(parts)
    else:
        e = And(Compare(">=", node.operand, node.low), Compare("<=", node.operand, node.high))
    return Not(e) if node.negated else e


def _balanced(parts: list[Node]) -> Node:
    """The OR of ``parts`` as a tree of depth log2(n): a list of 1,000 times chained
    left to right overflowed the recursion of compiling and pruning it."""
    half = len(parts) // 2
    return parts[0] if half == 0 else Or(_balanced(parts[:half]), _balanced(parts[half:]))


_Casts = dict[str, pa.DataType]  # the columns compared as another type, and that type
_Types = dict[str, pa.DataType]  # every column's compared type


def _value(node: Node, casts: _Casts) -> Any:
    if isinstance(node, Column):
        field = pc.field(node.name)
        return field.cast(casts[node.name]) if node.name in casts else field
    assert isinstance(node, Literal)
    if node.ticks is not None:  # a time, exact in its column's type
        return time_scalar(node.ticks, node.time_type)
    return scalar(node.value)


def _in(node: In, casts: _Casts, types: _Types) -> Any:
    """``x IN (...)`` as one ``is_in`` (:mod:`dload_arrow.catalog.in_lists`), with SQL's
    NULL rules; the OR of equalities for the types a value set does not cover."""
    assert isinstance(node.operand, Column)
    values = value_set(node, types[node.operand.name])
    if values is None:
        return functools.reduce(operator.or_, (
            _expr(Compare("=", node.operand, v), casts, types) for v in node.values))
    col = _value(node.operand, casts)
    if types[node.operand.name] != values.type:
        col = col.cast(values.type)
    e = pc.if_else(col.is_null(), _NULL_BOOL, col.isin(values.array))
    return e | pc.scalar(_NULL_BOOL) if values.has_null else e


def _expr(node: Node, casts: _Casts, types: _Types) -> Any:
    if isinstance(node, Literal):
        return pc.scalar(scalar(node.value))
    if isinstance(node, Compare):
        if any(isinstance(s, Literal) and s.value is None for s in (node.left, node.right)):
            return pc.scalar(_NULL_BOOL)  # x = NULL is unknown for every row, as in SQL
        if isinstance(node.left, Column) and isinstance(node.right, Column):
            return compare_columns(node.op, _value(node.left, casts), types[node.left.name],
                                   _value(node.right, casts), types[node.right.name])
        if (dec := decimal_literal(node, types.__getitem__)) is not None:  # (any digits)
            return compare_decimal(node.op, _value(node.left, casts), *dec)
        return _OPS[node.op](_value(node.left, casts), _value(node.right, casts))
    if isinstance(node, IsNull):
        e = pc.field(node.operand.name).is_null()  # type: ignore[union-attr]
        return ~e if node.negated else e
    if isinstance(node, In):
        e = _in(node, casts, types)
        return ~e if node.negated else e
    if isinstance(node, Between):
        e = _expr(And(Compare(">=", node.operand, node.low),
                      Compare("<=", node.operand, node.high)), casts, types)
        return ~e if node.negated else e
    if isinstance(node, And):
        return _expr(node.left, casts, types) & _expr(node.right, casts, types)
    if isinstance(node, Or):
        return _expr(node.left, casts, types) | _expr(node.right, casts, types)
    if isinstance(node, Not):
        return ~_expr(node.operand, casts, types)
    raise TypeError(node)


def compile_filter(text: str, schema: pa.Schema) -> CompiledFilter:
    """Parse ``text`` and check it against ``schema``; raise PredicateError if it is wrong."""
    node = _Compiler(schema, text).node(parse_predicate(text, schema))
    types = {f.name: compared_type(f.type) for f in schema}
    casts = {f.name: types[f.name] for f in schema if types[f.name] != f.type}
    return CompiledFilter(text=text, node=node, expression=_expr(node, casts, types))
