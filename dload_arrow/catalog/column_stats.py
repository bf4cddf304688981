"""Per-column statistics for ``describe()``: from the manifest, the shard footers, or data.

The manifest records min, max and null counts per row group for scalar columns, and null
counts per row group for the other columns (binary, tensors, lists, structs): exact, on every
root. Manifests written before the latter were recorded lack them; for those shards, on a
local root, the null counts come from the shards' Parquet footers, read in place (never the
data). A flat column's footer null count is exact; a tensor (fixed-size list) column's null
rows follow from its value and row counts; other nested columns are known to hold no null row
when a leaf counts no null, else stay unknown (None). On a remote root they stay unknown:
``describe()`` reads no shard bytes there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import pylist
from dload_arrow.read.context import ReadContext
from dload_arrow.read.random_access import RowGroupReader, ShardRef
from dload_arrow.read.reader import all_units
from dload_arrow.store.bounds import without_nan
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.shard import is_scalar
from dload_arrow.type_walk import leaf_count

__all__ = ["data_rows", "manifest_rows", "measured_only"]


def _rg_nulls(rg: Any, leaves: list[int], field: pa.Field) -> int | None:
    """Null rows of ``field`` in one row group's footer, or None when it cannot tell."""
    cols = [rg.column(i) for i in leaves]
    counts = [c.statistics.null_count if c.statistics is not None
              and c.statistics.has_null_count else None for c in cols]
    if len(cols) == 1 and cols[0].path_in_schema == field.name:
        return counts[0]
    typ = field.type
    if pa.types.is_fixed_size_list(typ) and len(cols) == 1 and typ.list_size > 1:
        # A null row is one leaf value, a row of size n is n: values = n * rows_set + nulls.
        set_rows, rest = divmod(cols[0].num_values - rg.num_rows, typ.list_size - 1)
        return None if rest else rg.num_rows - set_rows
    # Any leaf counting no null means no null row (a null row is a null in every leaf).
    return 0 if any(c == 0 for c in counts) else None


def _leaves(schema: pa.Schema) -> dict[str, list[int]]:
    """The Parquet leaf column indices of each top-level field (leaves follow field order)."""
    out: dict[str, list[int]] = {}
    i = 0
    for f in schema:
        n = leaf_count(f.type)
        out[f.name] = list(range(i, i + n))
        i += n
    return out


def _footer_nulls(ctx: ReadContext, manifest: Manifest, chosen: Sequence[tuple[int, int]],
                  fields: list[pa.Field]) -> dict[str, int | None]:
    reader = RowGroupReader(ctx)
    out: dict[str, int | None] = {f.name: 0 for f in fields}
    wanted = {f.name for f in fields}
    leaves: dict[str, list[int]] = {}
    by_shard: dict[int, list[int]] = {}
    for s, r in chosen:
        by_shard.setdefault(s, []).append(r)
    for s, rgs in sorted(by_shard.items()):
        meta = reader.metadata(ShardRef.of(manifest.shards[s]))
        if not leaves:
            leaves = _leaves(meta.schema.to_arrow_schema())
        for f in fields:
            for r in rgs:
                got = out[f.name]
                idx = leaves.get(f.name) if f.name in wanted else None
                n = _rg_nulls(meta.row_group(r), idx, f) if idx else None
                out[f.name] = None if got is None or n is None else got + n
    return out


def _manifest_nulls(t: pa.Table, column: str, chosen: Sequence[tuple[int, int]]
                    ) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Null rows of a non-scalar ``column`` in the ``chosen`` row groups the manifest counts,
    and the row groups it has no count for (written before they were recorded: all of them,
    or an older parent's after an append)."""
    name = f"rg_nulls.{column}"
    if name not in t.column_names:
        return 0, tuple(chosen)
    per = pylist(t.column(name))
    return (sum(per[s][r] for s, r in chosen if per[s] is not None),
            tuple((s, r) for s, r in chosen if per[s] is None))


def manifest_rows(ctx: ReadContext, manifest: Manifest,
                  units: Sequence[tuple[int, int]] | None,
                  footers: bool = True) -> list[dict[str, Any]]:
    """One row per column from the manifest's statistics. Null counts of non-scalar columns
    (whole row groups) are given only with ``footers``: from the manifest, or for an older
    manifest on a local root from the shard footers; else their counts are None."""
    chosen = all_units(manifest) if units is None else list(units)
    shards = manifest.shards
    rows = sum(shards[s].rg_rows[r] for s, r in chosen)
    t = manifest.table
    others = [f for f in manifest.schema if f.name != "__key__" and not is_scalar(f.type)]
    footer: dict[str, int | None] = {f.name: None for f in others}
    if footers:
        # counts the manifest lacks come from the shards' footers, on a local root (shards
        # written since keep their counts in the manifest: tensors stored as bytes have none
        # in the footer)
        lacking: dict[tuple[tuple[int, int], ...], list[pa.Field]] = {}
        known: dict[str, int] = {}
        for f in others:
            known[f.name], missing = _manifest_nulls(t, f.name, chosen)
            footer[f.name] = known[f.name]
            if missing:
                lacking.setdefault(missing, []).append(f)
        for missing, fields in lacking.items():
            read = _footer_nulls(ctx, manifest, missing, fields) if ctx.in_place else {}
            for f in fields:
                n = read.get(f.name)
                footer[f.name] = None if n is None else known[f.name] + n
    out = []
    index = {name: i for i, name in enumerate(t.column_names)}  # by name: O(1), not O(columns)
    for field in manifest.schema:
        c = field.name
        row: dict[str, Any] = {"column": c, "type": str(field.type), "count": None,
                               "nulls": None, "min": None, "max": None, "mean": None}
        if c in footer:
            nulls = footer[c]
            row.update(nulls=nulls, count=None if nulls is None else rows - nulls)
        if c == "__key__":
            lo_col, hi_col, nulls_col = "rg_key_min", "rg_key_max", None
        else:
            lo_col, hi_col, nulls_col = f"rg_min.{c}", f"rg_max.{c}", f"rg_nulls.{c}"
        if lo_col in index:
            lo, hi = pylist(t.column(index[lo_col])), pylist(t.column(index[hi_col]))
            nulls_l = pylist(t.column(index[nulls_col])) if nulls_col else None
            # a row group of NaN only has NaN bounds: the others' are the column's
            mins = without_nan([lo[s][r] for s, r in chosen if lo[s][r] is not None])
            maxs = without_nan([hi[s][r] for s, r in chosen if hi[s][r] is not None])
            n_null = sum(nulls_l[s][r] for s, r in chosen) if nulls_l else 0
            if nulls_l and any(lo[s][r] is None and nulls_l[s][r] < shards[s].rg_rows[r]
                               for s, r in chosen):  # bounds not kept (store/bounds.py)
                mins = maxs = []
            row.update(count=rows - n_null, nulls=n_null,
                       min=None if not mins else str(min(mins)),
                       max=None if not maxs else str(max(maxs)))
        out.append(row)
    return out


def measured_only(t: pa.DataType) -> bool:
    """Columns with a min and max only when read (describe(exact=True), a where() view): the
    manifest keeps no statistics for decimals and durations, whose ends are exact here."""
    return pa.types.is_decimal(t) or pa.types.is_duration(t)


def data_rows(table: pa.Table) -> list[dict[str, Any]]:
    """One row per column of ``table``, measured from its values."""
    out = []
    for field, col in zip(table.schema, table.columns, strict=True):
        row: dict[str, Any] = {"column": field.name, "type": str(field.type),
                               "count": len(col) - col.null_count, "nulls": col.null_count,
                               "min": None, "max": None, "mean": None}
        if pa.types.is_float16(field.type):  # Arrow has no min_max or mean kernel for these
            col = col.cast(pa.float32())
        exact = measured_only(field.type)
        if (is_scalar(field.type) or exact) and len(col) - col.null_count:
            # a duration has no min_max kernel: its int64 ticks, read back as timedeltas
            mm = pc.min_max(col.cast(pa.int64()) if pa.types.is_duration(field.type) else col)
            ends = pa.array([mm["min"].as_py(), mm["max"].as_py()], mm.type.field(0).type)
            lo, hi = pylist(ends.cast(field.type) if exact else ends)
            row["min"], row["max"] = str(lo), str(hi)
        if pa.types.is_integer(field.type) or pa.types.is_floating(field.type) or (
                pa.types.is_boolean(field.type)):
            mean = pc.mean(col.cast(pa.float64()) if pa.types.is_boolean(field.type) else col)
            row["mean"] = mean.as_py()
        out.append(row)
    return out
