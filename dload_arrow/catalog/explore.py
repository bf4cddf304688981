"""Exploration of one dataset version (or a ``where()`` view): Arrow, polars, pandas, stats.

Everything here honours a view's ``units`` (the row groups left after pruning) and
``predicate`` (the row filter). Arrow reads go through the read path's reader
(:func:`dload_arrow.read.reader.iter_units`); polars scans the shards' Parquet files itself,
in place for a local root or from the cache, so its optimiser pushes projections and
predicates down into the files.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.args import check_bool
from dload_arrow.catalog.column_stats import data_rows, manifest_rows
from dload_arrow.catalog.files import ShardFiles, shard_files
from dload_arrow.catalog.filtering import prune_units
from dload_arrow.catalog.frames import polars_shapes
from dload_arrow.catalog.in_lists import value_set
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
from dload_arrow.read.context import ReadContext
from dload_arrow.read.random_access import RowGroupReader, ShardRef
from dload_arrow.read.reader import all_units, iter_units, projection
from dload_arrow.rowfilter import Predicate
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.shard import is_scalar

__all__ = ["describe", "head", "polars_expr", "scan_polars", "to_arrow"]


def _batches(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
             columns: Sequence[str] | None,
             predicate: Predicate | None) -> Iterator[pa.RecordBatch]:
    chosen = all_units(manifest) if units is None else list(units)
    return iter_units(ctx, manifest, chosen, columns, predicate)


def to_arrow(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
             predicate: Predicate | None,
             columns: Sequence[str] | None = None) -> pa.Table:
    """Every (filtered) row of the view as one Table (``__key__`` first)."""
    schema = projection(manifest.schema, columns)
    return pa.Table.from_batches(list(_batches(ctx, manifest, units, columns, predicate)),
                                 schema=schema)


def head(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
         predicate: Predicate | None, n: int = 5,
         columns: Sequence[str] | None = None) -> pa.Table:
    """The first ``n`` (filtered) rows, reading one shard's row groups at a time, no more.

    Without a predicate only the row groups covering ``n`` rows are read; from a remote root
    they are read by range (like ``ds[i]``), not by downloading their whole shards: a ``dload
    head`` on S3 fetches a few MB, and fits any cache budget. With a predicate, shards are read
    in order (no prefetch) until ``n`` rows pass.
    """
    schema = projection(manifest.schema, columns)
    chosen = all_units(manifest) if units is None else list(units)
    if predicate is None:
        shards, rows, cut = manifest.shards, 0, 0
        while cut < len(chosen) and rows < n:
            rows += shards[chosen[cut][0]].rg_rows[chosen[cut][1]]
            cut += 1
        chosen = chosen[:cut]
        if not ctx.in_place and chosen:
            reader = RowGroupReader(ctx)
            names = None if columns is None else schema.names
            parts = [reader.read(ShardRef.of(shards[s]), rg, names) for s, rg in chosen]
            table = pa.concat_tables(parts).slice(0, n)
            return table.select(schema.names).cast(schema)
    runs: list[list[tuple[int, int]]] = []
    for unit in chosen:
        if runs and runs[-1][-1][0] == unit[0]:
            runs[-1].append(unit)
        else:
            runs.append([unit])
    got: list[pa.RecordBatch] = []
    have = 0
    for run in runs:
        if have >= n:
            break
        for batch in iter_units(ctx, manifest, run, columns, predicate, prefetch=0):
            if have < n:
                got.append(batch.slice(0, n - have))
                have += min(batch.num_rows, n - have)
    return pa.Table.from_batches(got, schema=schema)


_DESCRIBE = pa.schema([
    ("column", pa.string()), ("type", pa.string()), ("count", pa.int64()),
    ("nulls", pa.int64()), ("min", pa.string()), ("max", pa.string()),
    ("mean", pa.float64()), ("source", pa.string()),
])


def describe(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
             predicate: Predicate | None, exact: bool | None = None) -> pa.Table:
    """Per column: type, count, nulls, min, max (and mean when the data is read).

    Without a predicate (and unless ``exact``) everything comes from the manifest's
    statistics and no data is read; ``min``/``max`` are shown as text. Non-scalar columns
    (binary, tensors, lists) have counts and nulls (from the manifest, or for versions
    committed before it recorded them, from the footers of a local root's shards:
    :mod:`dload_arrow.catalog.column_stats`), and no min, max or mean. With a predicate the
    statistics would describe whole row groups, so the filtered rows are read and measured.
    """
    if check_bool("describe", "exact", exact, none=True) is None:
        exact = predicate is not None
    if not exact and predicate is not None:
        raise ValueError(
            "describe(exact=False) on a where() view would describe whole row groups, not the "
            "rows the filter keeps: call describe() (it reads the filtered rows), or describe "
            "the unfiltered dataset"
        )
    if exact:
        cols = [f.name for f in manifest.schema if is_scalar(f.type)]
        table = to_arrow(ctx, manifest, units, predicate, cols)
        full = {f.name for f in manifest.schema} - set(table.column_names)
        rows = data_rows(table)
        # With a predicate, footer counts (of whole row groups) would not describe the rows.
        rows += [r for r in manifest_rows(ctx, manifest, units, footers=predicate is None)
                 if r["column"] in full]
        source = "data"
    else:
        rows, source = manifest_rows(ctx, manifest, units), "manifest"
    order = {f.name: i for i, f in enumerate(manifest.schema)}
    rows.sort(key=lambda r: order[r["column"]])
    for r in rows:
        r["source"] = source
    return pa.Table.from_pylist(rows, schema=_DESCRIBE)


# --- polars ---------------------------------------------------------------------------------

def _pl() -> Any:
    try:
        import polars as pl
    except ImportError as e:
        raise ImportError("to_polars() needs polars: pip install 'polars>=1.34'") from e
    return pl


def polars_expr(node: Node, schema: pa.Schema | None = None) -> Any:
    """The polars expression of a compiled filter tree (same NULL semantics as SQL, and with
    the ``schema``, NaN compared as the row filter compares it: unequal to everything).

    With the ``schema``, string dictionary columns (polars Categorical) compare as strings,
    as in :mod:`dload_arrow.catalog.masks` (a Categorical's order is not the strings' in
    every polars version).
    """
    pl = _pl()
    ops = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}
    floats = set() if schema is None else {
        f.name for f in schema if pa.types.is_floating(f.type)}
    strings = set() if schema is None else {
        f.name for f in schema if pa.types.is_dictionary(f.type) and (
            pa.types.is_string(f.type.value_type) or pa.types.is_large_string(f.type.value_type))}

    def value(n: Node) -> Any:
        if isinstance(n, Column):
            if n.name in strings:
                return pl.col(n.name).cast(pl.String)
            # float32 compared in float64, as Arrow compares it with a Python float (polars
            # narrowed the literal: `f != 0.1` dropped the float32 0.1 that Arrow keeps)
            return pl.col(n.name).cast(pl.Float64) if n.name in floats else pl.col(n.name)
        assert isinstance(n, Literal)
        return pl.lit(n.value, dtype=pl.Boolean) if n.value is None else pl.lit(n.value)

    def in_set(n: In) -> Any:
        """``x IN (...)`` as one ``is_in`` (:mod:`dload_arrow.catalog.in_lists`), or None."""
        if schema is None or not isinstance(n.operand, Column):
            return None
        values = value_set(n, compared_type(schema.field(n.operand.name).type))
        if values is None:
            return None
        col = value(n.operand)
        if pa.types.is_floating(values.type):
            col = col.cast(pl.Float64)  # NaN is in no set: false, as the row filter says
        found = col.is_in(pl.from_arrow(values.array).implode())
        e = pl.when(col.is_null()).then(pl.lit(None, dtype=pl.Boolean)).otherwise(found)
        return e | pl.lit(None, dtype=pl.Boolean) if values.has_null else e

    def go(n: Node) -> Any:
        if isinstance(n, Literal):
            return value(n)
        if isinstance(n, Compare):
            if any(isinstance(s, Literal) and s.value is None for s in (n.left, n.right)):
                return pl.lit(None, dtype=pl.Boolean)
            e = ops[n.op](value(n.left), value(n.right))
            # NaN as Arrow (IEEE) compares it, not as polars (NaN = NaN, NaN above all)
            for side in (n.left, n.right):
                if isinstance(side, Column) and side.name in floats:
                    nan = pl.col(side.name).is_nan()
                    e = (e | nan) if n.op == "!=" else (e & ~nan)
            return e
        if isinstance(n, IsNull):
            e = value(n.operand).is_null()
            return ~e if n.negated else e
        if isinstance(n, In):
            e = in_set(n)
            if e is None:
                e = functools.reduce(operator.or_, (go(Compare("=", n.operand, v))
                                                    for v in n.values))
            return ~e if n.negated else e
        if isinstance(n, Between):
            e = go(And(Compare(">=", n.operand, n.low), Compare("<=", n.operand, n.high)))
            return ~e if n.negated else e
        if isinstance(n, And):
            return go(n.left) & go(n.right)
        if isinstance(n, Or):
            return go(n.left) | go(n.right)
        if isinstance(n, Not):
            return ~go(n.operand)
        raise TypeError(n)

    return go(node)


def scan_polars(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
                node: Node | None, columns: Sequence[str] | None = None) -> tuple[Any, ShardFiles]:
    """A polars LazyFrame over the view's shard files, and the files it holds in the cache.

    Only shards with a unit left are scanned; when the view names a subset of row groups,
    a row-index filter keeps exactly those (polars cannot select row groups by number).
    """
    pl = _pl()
    schema = projection(manifest.schema, columns)
    entries = manifest.shards
    chosen = all_units(manifest) if units is None else list(units)
    shard_ids = sorted({s for s, _ in chosen})
    files = shard_files(ctx, manifest, shard_ids, purpose="to_polars")
    if not files.paths:
        empty = pl.LazyFrame(schema=pl.from_arrow(schema.empty_table()).schema)
        return polars_shapes(empty, schema, pl), files
    lf = pl.scan_parquet(files.paths, glob=False)
    everything = sum(len(entries[s].rg_rows) for s in shard_ids)
    # Units that pruning left out cannot hold a passing row, so the filter alone is exact
    # there; only units narrowed some other way need the row-index filter (which costs
    # polars its own row-group statistics).
    explained = node is not None and list(chosen) == prune_units(node, manifest)
    if units is not None and not explained and len(set(chosen)) < everything:
        ranges, base = [], 0
        keep = set(chosen)
        for s in shard_ids:
            start = base
            for r, n in enumerate(entries[s].rg_rows):
                if (s, r) in keep:
                    ranges.append((start, start + n))
                start += n
            base = start
        merged: list[list[int]] = []
        for a, b in ranges:
            if merged and merged[-1][1] == a:
                merged[-1][1] = b
            else:
                merged.append([a, b])
        idx = pl.col("__row__")
        cond = functools.reduce(operator.or_, ((idx >= a) & (idx < b) for a, b in merged))
        lf = pl.scan_parquet(files.paths, glob=False, row_index_name="__row__").filter(cond)
        lf = lf.drop("__row__")
    if node is not None:
        lf = lf.filter(polars_expr(node, manifest.schema))
    if columns is not None:
        lf = lf.select(schema.names)
    return polars_shapes(lf, schema, pl), files
