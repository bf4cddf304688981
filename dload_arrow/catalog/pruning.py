"""Pruning: the row groups of a manifest where a compiled filter may keep a row.

Pruning uses the manifest's per-row-group statistics (``rg_min.<c>``, ``rg_max.<c>``,
``rg_nulls.<c>``, and ``rg_key_min``/``rg_key_max`` for ``__key__``). Each unit gets a
three-valued verdict (could a row be true / false / unknown?); a unit is kept when some row
could pass. The verdicts only ever over-approximate, so a pruned read returns exactly the rows
of a full scan filtered by the same expression. A time literal compared with a timestamp or
time-of-day column is compared as its exact count of the column's unit with the statistics'
counts. Manifests written before time-of-day statistics were exact hold a ``time64[ns]``
maximum floored to the microsecond: such a maximum (a whole microsecond) is read as the last
nanosecond of that microsecond, so that it never excludes a matching row group.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.arrays import pylist
from dload_arrow.catalog.in_lists import ValueSet, value_set
from dload_arrow.catalog.masks import compared_type
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
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["prune_units"]

_Verdict = tuple[bool, bool, bool]  # (some row may be true, ... false, ... unknown)
_ANY: _Verdict = (True, True, True)


class _Stats:
    """Per-row-group statistics of the manifest, read lazily per column."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.table = manifest.table
        self.rows = [list(e.rg_rows) for e in manifest.shards]
        self._cols: dict[str, tuple[list[Any], list[Any], list[Any], bool] | None] = {}
        self._sets: dict[int, tuple[In, ValueSet | None]] = {}

    def value_set(self, node: In) -> ValueSet | None:
        """The value set of an IN node against its column (None: test value by value)."""
        if id(node) not in self._sets:  # the node is kept with it, so its id stays its own
            name = node.operand.name  # type: ignore[union-attr]
            typ = compared_type(self.manifest.schema.field(name).type)
            self._sets[id(node)] = (node, value_set(node, typ))
        return self._sets[id(node)][1]

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
                nulls = (pylist(self.table.column(nulls_col)) if nulls_col in names
                         else [[0] * len(r) for r in self.rows])
                typ = self.manifest.schema.field(name).type
                highs = _bounds(self.table.column(hi))
                if typ == pa.time64("ns"):  # maybe floored to the microsecond (see above)
                    highs = [[_ceil_us(h) for h in per] for per in highs]
                self._cols[name] = (_bounds(self.table.column(lo)), highs, nulls,
                                    pa.types.is_floating(typ))
        return self._cols[name]


def _bounds(column: pa.ChunkedArray) -> list[Any]:
    """A statistics column's per-row-group lists; timestamps and times of day as their integer
    counts of the column's unit, which time literals carry (:attr:`Literal.ticks`): exact to
    the nanosecond, where datetimes stop at microseconds."""
    t = column.type
    if pa.types.is_list(t) and (pa.types.is_timestamp(t.value_type)
                                or pa.types.is_time(t.value_type)):
        ints = pa.int32() if t.value_type.bit_width == 32 else pa.int64()
        column = column.cast(pa.list_(ints))
    return pylist(column)


def _ceil_us(ns: int | None) -> int | None:
    """A ``time64[ns]`` maximum that is a whole microsecond, as the microsecond's last
    nanosecond: the true maximum of an older manifest's floored statistic is no later."""
    return ns + 999 if ns is not None and ns % 1000 == 0 else ns


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
    v = node.right.value if node.right.ticks is None else node.right.ticks
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
    if (node.op in ("=", "!=") and isinstance(v, float) and not v.is_integer()
            and isinstance(lo, int) and not isinstance(lo, bool)):
        # An integer never equals a fractional value (nor NaN or infinity).
        return (node.op == "!=", node.op == "=", may_null)
    try:
        may_true, may_false = _compare(node.op, lo, hi, v)
    except TypeError:
        return _ANY
    if floating:  # NaN is not in [lo, hi]: it compares false, and unequal to everything
        may_false = True
        may_true = may_true or node.op == "!="
    return (may_true, may_false, may_null)


def _in(node: In, stats: _Stats, s: int, r: int) -> _Verdict:
    """The verdict of ``x IN (...)``: that of the OR of the equalities, found for a
    normalised value set (:mod:`dload_arrow.catalog.in_lists`) with one bisection."""
    col = stats.column(node.operand.name)  # type: ignore[union-attr]
    if col is None:  # no statistics: a NULL literal still makes no row false
        return (True, all(v.value is not None for v in node.values), True)
    values = stats.value_set(node)
    if values is None:
        parts = [_leaf(Compare("=", node.operand, v), stats, s, r) for v in node.values]
        return (any(p[0] for p in parts), all(p[1] for p in parts), any(p[2] for p in parts))
    lo, hi, nulls, floating = col[0][s][r], col[1][s][r], col[2][s][r], col[3]
    may_null = nulls > 0 or values.has_null  # a NULL literal: no row is false
    if stats.rows[s][r] - nulls <= 0:
        return (False, False, may_null)
    if lo is None or hi is None or (floating and (math.isnan(lo) or math.isnan(hi))):
        return (True, not values.has_null, True)
    vs = values.values
    try:
        i = bisect.bisect_left(vs, lo)
        may_true = i < len(vs) and vs[i] <= hi
        only = lo == hi and may_true  # every non-null row holds one listed value
    except TypeError:
        return _ANY
    may_false = not values.has_null and (floating or not only)
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
        t, f, n = _in(node, stats, s, r)
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
