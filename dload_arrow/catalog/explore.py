"""Exploration of one dataset version (or a ``where()`` view): Arrow, polars, pandas, stats.

Everything here honours a view's ``units`` (the row groups left after pruning) and
``predicate`` (the row filter). Arrow reads go through the read path's reader
(:func:`dload_arrow.read.reader.iter_units`); polars views are in
:mod:`dload_arrow.catalog.polars_view`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.args import check_bool, column_names
from dload_arrow.catalog.column_stats import data_rows, manifest_rows, measured_only
from dload_arrow.errors import ConfigError
from dload_arrow.read.context import ReadContext
from dload_arrow.read.random_access import RowGroupReader, ShardRef
from dload_arrow.read.reader import all_units, iter_units, projection
from dload_arrow.rowfilter import Predicate
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.shard import is_scalar

__all__ = ["describe", "head", "to_arrow"]


def _batches(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
             columns: Sequence[str] | None,
             predicate: Predicate | None) -> Iterator[pa.RecordBatch]:
    chosen = all_units(manifest) if units is None else list(units)
    return iter_units(ctx, manifest, chosen, columns, predicate)


def to_arrow(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
             predicate: Predicate | None,
             columns: Sequence[str] | None = None) -> pa.Table:
    """Every (filtered) row of the view as one Table (``__key__`` first)."""
    columns = column_names(columns, "to_arrow")  # read twice below: a generator once
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
    columns = column_names(columns, "head")
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
            parts = [reader.read(ShardRef.of(shards[s]), rg, names, dataset=manifest.name,
                                 version=manifest.version)
                     for s, rg in chosen]
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
    :mod:`dload_arrow.catalog.column_stats`), and no min, max or mean; decimals and durations
    have an exact min and max only when read (``exact``). With a predicate the
    statistics would describe whole row groups, so the filtered rows are read and measured.
    """
    if check_bool("describe", "exact", exact, none=True) is None:
        exact = predicate is not None
    if not exact and predicate is not None:
        raise ConfigError(
            "describe(exact=False) on a where() view would describe whole row groups, not the "
            "rows the filter keeps: call describe() (it reads the filtered rows), or describe "
            "the unfiltered dataset"
        )
    if exact:
        cols = [f.name for f in manifest.schema if is_scalar(f.type) or measured_only(f.type)]
        table = to_arrow(ctx, manifest, units, predicate, cols)
        full = {f.name for f in manifest.schema} - set(table.column_names)
        rows = data_rows(table)
        if predicate is None:
            rows += [r for r in manifest_rows(ctx, manifest, units) if r["column"] in full]
        else:  # footer counts (of whole row groups) would not describe the rows: count them
            rows += _counted_rows(ctx, manifest, units, predicate,
                                  [f for f in manifest.schema if f.name in full])
        source = "data"
    else:
        rows, source = manifest_rows(ctx, manifest, units), "manifest"
    order = {f.name: i for i, f in enumerate(manifest.schema)}
    rows.sort(key=lambda r: order[r["column"]])
    for r in rows:
        r["source"] = source
    return pa.Table.from_pylist(rows, schema=_DESCRIBE)


def _counted_rows(ctx: ReadContext, manifest: Manifest,
                  units: Sequence[tuple[int, int]] | None, predicate: Predicate,
                  fields: list[pa.Field]) -> list[dict[str, Any]]:
    """Count and nulls of non-scalar columns over the rows ``predicate`` keeps, read a unit
    at a time (a view of images is not held in memory to count its nulls)."""
    count = dict.fromkeys((f.name for f in fields), 0)
    nulls = dict(count)
    if fields:
        chosen = all_units(manifest) if units is None else list(units)
        for batch in iter_units(ctx, manifest, chosen, columns=list(count),
                                predicate=predicate):
            for name in count:
                col = batch.column(name)
                count[name] += len(col) - col.null_count
                nulls[name] += col.null_count
    return [{"column": f.name, "type": str(f.type), "count": count[f.name],
             "nulls": nulls[f.name], "min": None, "max": None, "mean": None} for f in fields]
