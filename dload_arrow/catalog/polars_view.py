"""Views as polars LazyFrames: a scan of the view's shard files with its filter in polars.

``polars_expr`` turns a compiled filter tree into a polars expression with the row filter's
semantics (SQL NULLs, NaN unequal to everything, instants compared in UTC); ``scan_polars``
scans the files a view needs, narrowed to its row groups where pruning does not explain them.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.catalog.files import ShardFiles, corrupt_copies, shard_files
from dload_arrow.catalog.filtering import prune_units
from dload_arrow.catalog.frames import polars_col, polars_shapes
from dload_arrow.catalog.in_lists import value_set
from dload_arrow.catalog.masks import compared_type, decimal_literal, decimal_operand
from dload_arrow.catalog.packed import scan_parquet_lists
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
from dload_arrow.errors import SchemaError
from dload_arrow.read.context import ReadContext
from dload_arrow.read.reader import all_units, projection
from dload_arrow.storage.base import redact_url
from dload_arrow.store.manifest import Manifest
from dload_arrow.type_walk import holds_type

__all__ = ["polars_expr", "scan_polars"]

_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


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
    # instants compare in UTC: polars refuses to compare its 'Etc/GMT-2' (Arrow's '+02:00')
    # with a UTC literal
    zoned = set() if schema is None else {
        f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.tz is not None}

    def value(n: Node) -> Any:
        if isinstance(n, Column):
            if n.name in strings:
                return polars_col(pl, n.name).cast(pl.String)
            if n.name in zoned:
                return polars_col(pl, n.name).dt.convert_time_zone("UTC")
            # floats compared in float64 (a float32 column's literals are float32 values
            # already: literal_kinds.nearest_float32), as the row filter compares them
            col = polars_col(pl, n.name)
            return col.cast(pl.Float64) if n.name in floats else col
        assert isinstance(n, Literal)
        if n.ticks is not None and pa.types.is_time(n.time_type):
            # polars' Time counts nanoseconds; a datetime.time would drop them
            return pl.lit(n.ticks * _NANOS[n.time_type.unit]).cast(pl.Time)
        if n.ticks is not None and n.time_type.tz is not None:
            utc = _utc_literal(pl, n.ticks, n.time_type)
            if utc is not None:
                return utc
        return pl.lit(n.value, dtype=pl.Boolean) if n.value is None else pl.lit(n.value)

    def sides(left: Node, right: Node) -> tuple[Any, Any]:
        """Both sides' expressions; a number column compared with a float32 column is
        rounded to float32 first, as DuckDB and the row filter compare them
        (:mod:`dload_arrow.catalog.column_pairs`)."""
        a, b = value(left), value(right)
        if schema is not None and isinstance(left, Column) and isinstance(right, Column):
            lt, rt = (compared_type(schema.field(c.name).type) for c in (left, right))
            if rt == pa.float32() and not pa.types.is_floating(lt):
                a = a.cast(pl.Float32)
            elif lt == pa.float32() and not pa.types.is_floating(rt):
                b = b.cast(pl.Float32)
        return a, b

    def in_set(n: In) -> Any:
        """``x IN (...)`` as one ``is_in`` (:mod:`dload_arrow.catalog.in_lists`), or None."""
        if schema is None or not isinstance(n.operand, Column):
            return None
        values = value_set(n, compared_type(schema.field(n.operand.name).type))
        if values is None:
            return None
        col = value(n.operand)
        array = values.array
        if n.operand.name in zoned:  # the column is converted to UTC: so are the values
            array = array.cast(pa.timestamp(values.type.unit, "UTC"))
        if pa.types.is_floating(values.type):
            col = col.cast(pl.Float64)  # NaN is in no set: false, as the row filter says
        found = col.is_in(pl.from_arrow(array).implode())
        e = pl.when(col.is_null()).then(pl.lit(None, dtype=pl.Boolean)).otherwise(found)
        return e | pl.lit(None, dtype=pl.Boolean) if values.has_null else e

    def go(n: Node) -> Any:
        if isinstance(n, Literal):
            return value(n)
        if isinstance(n, Compare):
            if any(isinstance(s, Literal) and s.value is None for s in (n.left, n.right)):
                return pl.lit(None, dtype=pl.Boolean)
            if schema is not None and (dec := decimal_literal(
                    n, lambda c: compared_type(schema.field(c).type))) is not None:
                assert isinstance(n.left, Column)
                got, col = decimal_operand(n.op, *dec), polars_col(pl, n.left.name)
                if isinstance(got, bool):  # (polars holds no literal past 38 digits)
                    return (col == col) if got else (col != col)
                return ops[got[0]](col, pl.lit(got[1]))
            e = ops[n.op](*sides(n.left, n.right))
            # NaN as Arrow (IEEE) compares it, not as polars (NaN = NaN, NaN above all); a
            # comparison with a null stays null (null | true would be true, under NOT too)
            for side in (n.left, n.right):
                if isinstance(side, Column) and side.name in floats:
                    nan = polars_col(pl, side.name).is_nan() & e.is_not_null()
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


def _utc_literal(pl: Any, ticks: int, typ: pa.DataType) -> Any:
    """A time literal against a zoned column as a polars UTC datetime of its exact ticks,
    the zone the column is converted to (polars refuses to compare 'UTC' with
    'Europe/Berlin', or even 'Etc/UTC'); None beyond what polars' units hold."""
    unit, count = ("ms", ticks * 1000) if typ.unit == "s" else (typ.unit, ticks)  # no 's'
    if not -(2**63) <= count < 2**63:
        return None
    return pl.lit(count, dtype=pl.Int64).cast(pl.Datetime(unit, "UTC"))


_OFFSET = re.compile(r"\A[+-]\d\d:(\d\d)\Z")


def _refuse_polars_zones(manifest: Manifest) -> None:
    """polars has no zone for a fixed offset that is not whole hours ('+05:30'): it panics on
    reading such a column, also when the scan leaves it out. Say so first."""
    for f in manifest.schema:
        tz = f.type.tz if pa.types.is_timestamp(f.type) else None
        m = _OFFSET.match(tz or "")
        if m and m.group(1) != "00":
            raise SchemaError(
                f"to_polars() cannot read {manifest.name!r}: column {f.name!r} is in the time "
                f"zone {tz!r}, a fixed offset polars has no zone for (its scan fails on the "
                "files, whichever columns are selected); read it with to_arrow() or "
                "to_pandas(), or store the column in UTC or a named zone (e.g. 'Asia/Kolkata')"
            )


def _refuse_list_views(manifest: Manifest) -> None:
    """polars cannot read Arrow's list views (it panics on the files' schema, whichever
    columns are selected). Say so first."""
    for f in manifest.schema:
        if holds_type(f.type, lambda t: pa.types.is_list_view(t)
                      or pa.types.is_large_list_view(t)):
            raise SchemaError(
                f"to_polars() cannot read {manifest.name!r}: column {f.name!r} ({f.type}) holds "
                "list views, which polars does not read (its scan fails on the files, whichever "
                "columns are selected); read it with to_arrow() or to_pandas(), or commit the "
                "column as a list (pa.array(col.to_pylist(), pa.list_(col.type.value_type)))"
            )


def _filter_columns(node: Node | None) -> set[str]:
    """The columns a filter tree reads."""
    if node is None or isinstance(node, Literal):
        return set()
    if isinstance(node, Column):
        return {node.name}
    if isinstance(node, Compare | And | Or):
        return _filter_columns(node.left) | _filter_columns(node.right)
    if isinstance(node, IsNull | Not | In):
        return _filter_columns(node.operand)
    if isinstance(node, Between):
        return _filter_columns(node.operand) | _filter_columns(node.low) | _filter_columns(
            node.high)
    raise TypeError(node)


def _refuse_wide_decimals(manifest: Manifest, schema: pa.Schema, node: Node | None) -> None:
    """polars holds decimals of at most 38 digits: a wider decimal256 column it reads failed
    only at ``collect()``, without naming the column ("precision must be between 1 and 38",
    or "Can't decode Decimal256" in a filter); inside a list or a struct it read them as
    128-bit numbers, wrong past 38 digits, silently (QA roundtrip55). Say so first."""
    read = set(schema.names) | _filter_columns(node)
    for f in manifest.schema:
        if f.name in read and holds_type(f.type, lambda t: pa.types.is_decimal(t) and
                                         t.precision > 38):
            raise SchemaError(
                f"to_polars() cannot read column {f.name!r} of {manifest.name!r}: it is "
                f"{f.type}, and polars holds decimals of at most 38 digits; leave it out "
                "(columns=[...] without it, and no where() on it), or read it with to_arrow()")


def scan_polars(ctx: ReadContext, manifest: Manifest, units: Sequence[tuple[int, int]] | None,
                node: Node | None, columns: Sequence[str] | None = None) -> tuple[Any, ShardFiles]:
    """A polars LazyFrame over the view's shard files, and the files it holds in the cache.

    Only shards with a unit left are scanned; when the view names a subset of row groups,
    a row-index filter keeps exactly those (polars cannot select row groups by number).
    """
    pl = _pl()
    _refuse_polars_zones(manifest)
    _refuse_list_views(manifest)
    schema = projection(manifest.schema, columns)
    _refuse_wide_decimals(manifest, schema, node)
    entries = manifest.shards
    chosen = all_units(manifest) if units is None else list(units)
    shard_ids = sorted({s for s, _ in chosen})
    files = shard_files(ctx, manifest, shard_ids, purpose="to_polars")
    if not files.paths:
        empty = pl.LazyFrame(schema=pl.from_arrow(schema.empty_table()).schema)
        return polars_shapes(empty, schema, pl), files
    try:
        lf = scan_parquet_lists(pl, files.paths, manifest.schema)
    except OSError as e:  # a damaged file: named, a cached copy deleted to fetch anew
        raise corrupt_copies([files], e, redact_url(ctx.storage.url)) or e from e
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
        lf = scan_parquet_lists(pl, files.paths, manifest.schema, "__row__").filter(cond)
        lf = lf.drop("__row__")
    if node is not None:
        lf = lf.filter(polars_expr(node, manifest.schema))
    if columns is not None:
        lf = lf.select([polars_col(pl, n) for n in schema.names])
    return polars_shapes(lf, schema, pl), files
