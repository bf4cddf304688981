"""Filters on a dataset: a parsed predicate becomes an Arrow expression and a pruned unit list.

Pruning uses the manifest's per-row-group statistics (``rg_min.<c>``, ``rg_max.<c>``,
``rg_nulls.<c>``, and ``rg_key_min``/``rg_key_max`` for ``__key__``). Each unit gets a
three-valued verdict (could a row be true / false / unknown?); a unit is kept when some row
could pass. The verdicts only ever over-approximate, so a pruned read returns exactly the rows
of a full scan filtered by the same expression.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

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
    PredicateError,
    flip,
    parse_predicate,
)
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["CompiledFilter", "compile_filter", "prune_units"]

_OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}
_NULL_BOOL = pa.scalar(None, pa.bool_())


def _kind(typ: pa.DataType) -> str:
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "number"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "string"
    if pa.types.is_boolean(typ):
        return "bool"
    if pa.types.is_temporal(typ):
        return "temporal"
    return "other"


def _literal_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


@dataclass(frozen=True)
class CompiledFilter:
    """A validated filter: its text, tree (literals typed) and Arrow expression."""

    text: str
    node: Node
    expression: pc.Expression


class _Compiler:
    def __init__(self, schema: pa.Schema, text: str) -> None:
        self.schema = schema
        self.text = text

    def error(self, what: str) -> PredicateError:
        return PredicateError(f"filter {self.text!r}: {what}")

    def column(self, name: str) -> pa.Field:
        idx = self.schema.get_field_index(name)
        if idx < 0:
            known = ", ".join(self.schema.names)
            raise self.error(f"no column {name!r}; columns are {known}")
        return self.schema.field(idx)

    def typed(self, node: Node, other: Node | None) -> Node:
        """Check operand types; cast string literals compared with time columns."""
        if not isinstance(node, Literal) or not isinstance(other, Column):
            return node
        field = self.column(other.name)
        kind, lit = _kind(field.type), _literal_kind(node.value)
        if lit == "null" or kind == lit:
            return node
        if kind == "temporal" and lit == "string":
            try:
                return Literal(pa.scalar(node.value).cast(field.type).as_py())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise self.error(f"{node.value!r} is not a {field.type} value: {e}") from e
        raise self.error(
            f"column {field.name!r} is {field.type} and cannot be compared with {node.value!r}"
            + ("; where() compares scalar columns (numbers, strings, bools, times)"
               if kind == "other" else "")
        )

    def node(self, node: Node) -> Node:
        if isinstance(node, Column):
            field = self.column(node.name)
            if not pa.types.is_boolean(field.type):
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
                if _kind(a.type) != _kind(b.type):
                    raise self.error(f"columns {a.name!r} ({a.type}) and {b.name!r} ({b.type}) "
                                     "cannot be compared")
            if not isinstance(left, (Column, Literal)) or not isinstance(right, (Column, Literal)):
                raise self.error("comparisons take columns and values, not conditions")
            return Compare(op, left, self.typed(right, left))
        if isinstance(node, IsNull):
            if not isinstance(node.operand, Column):
                raise self.error("IS NULL applies to a column")
            self.column(node.operand.name)
            return node
        if isinstance(node, In):
            col = self.operand(node.operand)
            return In(col, tuple(self.typed(v, col) for v in node.values),  # type: ignore[misc]
                      node.negated)
        if isinstance(node, Between):
            col = self.operand(node.operand)
            return Between(col, self.typed(node.low, col), self.typed(node.high, col),
                           node.negated)
        if isinstance(node, And):
            return And(self.node(node.left), self.node(node.right))
        if isinstance(node, Or):
            return Or(self.node(node.left), self.node(node.right))
        if isinstance(node, Not):
            return Not(self.node(node.operand))
        raise self.error(f"unsupported part {node!r}")

    def operand(self, node: Node) -> Column:
        if not isinstance(node, Column):
            raise self.error("IN and BETWEEN apply to a column")
        self.operand_column(node)
        return node

    def operand_column(self, col: Column) -> None:
        field = self.column(col.name)
        if _kind(field.type) == "other":
            raise self.error(f"column {col.name!r} is {field.type}; where() compares scalar "
                             "columns (numbers, strings, bools, times); test it with IS NULL")


def _value(node: Node) -> Any:
    if isinstance(node, Column):
        return pc.field(node.name)
    assert isinstance(node, Literal)
    return _NULL_BOOL if node.value is None else pa.scalar(node.value)


def _expr(node: Node) -> Any:
    if isinstance(node, Literal):
        return pc.scalar(node.value if node.value is not None else _NULL_BOOL)
    if isinstance(node, Compare):
        if any(isinstance(s, Literal) and s.value is None for s in (node.left, node.right)):
            return pc.scalar(_NULL_BOOL)  # x = NULL is unknown for every row, as in SQL
        return _OPS[node.op](_value(node.left), _value(node.right))
    if isinstance(node, IsNull):
        e = pc.field(node.operand.name).is_null()  # type: ignore[union-attr]
        return ~e if node.negated else e
    if isinstance(node, In):
        e = functools.reduce(operator.or_, (_expr(Compare("=", node.operand, v))
                                            for v in node.values))
        return ~e if node.negated else e
    if isinstance(node, Between):
        e = _expr(And(Compare(">=", node.operand, node.low), Compare("<=", node.operand,
                                                                      node.high)))
        return ~e if node.negated else e
    if isinstance(node, And):
        return _expr(node.left) & _expr(node.right)
    if isinstance(node, Or):
        return _expr(node.left) | _expr(node.right)
    if isinstance(node, Not):
        return ~_expr(node.operand)
    raise TypeError(node)


def compile_filter(text: str, schema: pa.Schema) -> CompiledFilter:
    """Parse ``text`` and check it against ``schema``; raise PredicateError if it is wrong."""
    node = _Compiler(schema, text).node(parse_predicate(text))
    return CompiledFilter(text=text, node=node, expression=_expr(node))


# --- pruning ------------------------------------------------------------------------------

_Verdict = tuple[bool, bool, bool]  # (some row may be true, ... false, ... unknown)
_ANY: _Verdict = (True, True, True)


class _Stats:
    """Per-row-group statistics of the manifest, read lazily per column."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.table = manifest.table
        self.rows = [list(e.rg_rows) for e in manifest.shards]
        self._cols: dict[str, tuple[list[Any], list[Any], list[Any], bool] | None] = {}

    def column(self, name: str) -> tuple[list[Any], list[Any], list[Any], bool] | None:
        if name not in self._cols:
            names = self.table.column_names
            if name == KEY_COLUMN:
                lo, hi = "rg_key_min", "rg_key_max"
            else:
                lo, hi = f"rg_min.{name}", f"rg_max.{name}"
            if lo not in names or hi not in names:
                self._cols[name] = None
            else:
                nulls_col = f"rg_nulls.{name}"
                nulls = (self.table.column(nulls_col).to_pylist() if nulls_col in names
                         else [[0] * len(r) for r in self.rows])
                typ = self.manifest.schema.field(name).type
                self._cols[name] = (self.table.column(lo).to_pylist(),
                                    self.table.column(hi).to_pylist(), nulls,
                                    pa.types.is_floating(typ))
        return self._cols[name]


def _compare(op: str, lo: Any, hi: Any, v: Any) -> tuple[bool, bool]:
    if op == "=":
        return lo <= v <= hi, not (lo == hi == v)
    if op == "!=":
        return not (lo == hi == v), lo <= v <= hi
    if op == "<":
        return lo < v, hi >= v
    if op == "<=":
        return lo <= v, hi > v
    if op == ">":
        return hi > v, lo <= v
    return hi >= v, lo < v  # ">="


def _leaf(node: Compare, stats: _Stats, s: int, r: int) -> _Verdict:
    if not isinstance(node.left, Column) or not isinstance(node.right, Literal):
        return _ANY
    v = node.right.value
    if v is None:
        return (False, False, True)
    col = stats.column(node.left.name)
    if col is None:
        return _ANY
    lo, hi, nulls, floating = col[0][s][r], col[1][s][r], col[2][s][r], col[3]
    rows = stats.rows[s][r]
    may_null = nulls > 0
    if rows - nulls <= 0:
        return (False, False, may_null)
    if lo is None or hi is None or (floating and (math.isnan(lo) or math.isnan(hi))):
        return _ANY
    try:
        may_true, may_false = _compare(node.op, lo, hi, v)
    except TypeError:
        return _ANY
    if floating:  # NaN is not in [lo, hi]: it compares false, and unequal to everything
        may_false = True
        may_true = may_true or node.op == "!="
    return (may_true, may_false, may_null)


def _verdict(node: Node, stats: _Stats, s: int, r: int) -> _Verdict:
    if isinstance(node, Compare):
        return _leaf(node, stats, s, r)
    if isinstance(node, Literal):
        v = node.value
        return (v is True, v is False, v is None)
    if isinstance(node, IsNull):
        col = stats.column(node.operand.name)  # type: ignore[union-attr]
        if col is None:
            return _ANY
        nulls, rows = col[2][s][r], stats.rows[s][r]
        t, f = nulls > 0, rows - nulls > 0
        return (f, t, False) if node.negated else (t, f, False)
    if isinstance(node, In):
        parts = [_leaf(Compare("=", node.operand, v), stats, s, r) for v in node.values]
        t = any(p[0] for p in parts)
        f = all(p[1] for p in parts)
        n = any(p[2] for p in parts)
        return (f, t, n) if node.negated else (t, f, n)
    if isinstance(node, Between):
        inner = _verdict(And(Compare(">=", node.operand, node.low),
                             Compare("<=", node.operand, node.high)), stats, s, r)
        return (inner[1], inner[0], inner[2]) if node.negated else inner
    if isinstance(node, And):
        a, b = _verdict(node.left, stats, s, r), _verdict(node.right, stats, s, r)
        return (a[0] and b[0], a[1] or b[1], a[2] or b[2])
    if isinstance(node, Or):
        a, b = _verdict(node.left, stats, s, r), _verdict(node.right, stats, s, r)
        return (a[0] or b[0], a[1] and b[1], a[2] or b[2])
    if isinstance(node, Not):
        a = _verdict(node.operand, stats, s, r)
        return (a[1], a[0], a[2])
    return _ANY


def prune_units(
    node: Node, manifest: Manifest, units: Sequence[tuple[int, int]] | None = None
) -> list[tuple[int, int]]:
    """The ``(shard, row group)`` units (of ``units``, default all) where a row may pass."""
    stats = _Stats(manifest)
    if units is None:
        units = [(s, r) for s, rows in enumerate(stats.rows) for r in range(len(rows))]
    return [(s, r) for s, r in units if _verdict(node, stats, s, r)[0]]
