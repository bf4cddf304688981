"""Shard files as DuckDB and polars read them: tensors stored as bytes become lists again.

A shard may store a tensor column as fixed-width bytes (store/tensor_layout.py). DuckDB and
polars read Parquet files themselves, so they would see a BLOB / Binary column there. The SQL
source of ``samples('name')`` and the polars scan therefore turn each such column back: in
DuckDB through a vectorised Python function (the same no-copy view the readers use), in
polars with ``bin.reinterpret``. Each engine then shows the type it showed for lists: DuckDB a
``UTINYINT[]`` list, polars an ``Array(UInt8, n)``. Files of one dataset may differ (shards
written before the byte layout, or whose tensors held a null element), so files are read in
runs of one layout and the runs put together in the files' order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dload_arrow.catalog.frames import polars_col
from dload_arrow.errors import SqlError
from dload_arrow.store.tensor_layout import packable, packed_names, restore_array

__all__ = ["layout_runs", "scan_parquet_lists", "sql_source"]

# DuckDB's names for Arrow's numbers (float16 reads as FLOAT: DuckDB has no half float)
_DUCK = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
         "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT",
         "halffloat": "FLOAT", "float": "FLOAT", "double": "DOUBLE"}


def layout_runs(paths: Sequence[str], schema: pa.Schema) -> list[tuple[list[str], list[str]]]:
    """``paths`` (shards of a dataset of ``schema``) in runs of consecutive files that store
    the same columns as bytes: ``[(packed column names, files), ...]`` in the files' order.

    One footer read a file, none when ``schema`` has no tensor a shard could store as bytes.
    A footer that does not read is an OSError naming the file (a damaged copy)."""
    if not packable(schema):
        return [([], list(paths))] if paths else []
    runs: list[tuple[list[str], list[str]]] = []
    for path in paths:
        packed = _packed_of(path)
        if runs and runs[-1][0] == packed:
            runs[-1][1].append(path)
        else:
            runs.append((packed, [path]))
    return runs


# shard file (name: its digest; size and change time: a file damaged since, read anew, so
# the query names it) -> its columns stored as bytes
_LAYOUTS: dict[tuple[str, int, int], list[str]] = {}
_LAYOUTS_KEPT = 200_000
_FEW_RUNS = 16  # polars scans of one layout each, one after the other (scan_parquet_lists)


def _packed_of(path: str) -> list[str]:
    """The columns the shard file at ``path`` stores as bytes (its footer read once)."""
    try:
        st = os.stat(path)
        name = (os.path.basename(path), st.st_size, st.st_mtime_ns)
        got = _LAYOUTS.get(name)
        if got is None:
            got = packed_names(pq.read_schema(path))
            if len(_LAYOUTS) >= _LAYOUTS_KEPT:
                _LAYOUTS.clear()
            _LAYOUTS[name] = got
    except (OSError, pa.ArrowInvalid) as e:
        raise OSError(f"{path}: {e}") from e
    return got


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _udf(con: Any, typ: pa.DataType) -> str:
    """The name of a DuckDB function turning the BLOBs of tensors of ``typ`` into lists
    (created on ``con`` on first use: the name says all it does)."""
    item = str(typ.value_type)
    name = f"__dload_tensor_{item}_{typ.list_size}"
    import duckdb

    def lists(blobs: Any) -> pa.Array:
        arr = blobs.combine_chunks() if isinstance(blobs, pa.ChunkedArray) else blobs
        out = restore_array(arr, typ)
        if item == "halffloat":  # as DuckDB reads a half-float list from Parquet: floats
            out = out.cast(pa.list_(pa.float32(), typ.list_size))
        return out

    try:
        con.create_function(name, lists, [duckdb.sqltype("BLOB")],
                            duckdb.sqltype(f"{_DUCK[item]}[]"), type="arrow")
    except duckdb.NotImplementedException as e:  # made by an earlier query
        if "already created" not in str(e):
            raise
    return name


def sql_source(con: Any, key: str, paths: Sequence[str], schema: pa.Schema,
               params: dict[str, Any]) -> str:
    """What replaces ``samples(...)`` in a query: ``read_parquet($key)`` over ``paths``, with
    each tensor stored as bytes turned back into its list (binds ``params[key...]``)."""
    try:
        runs = layout_runs(paths, schema)
    except OSError as e:  # the catalog names the damaged file (catalog/files.corrupt_copies)
        raise SqlError(f"a shard file does not read: {e}") from e
    if len(runs) == 1 and not runs[0][0]:
        params[key] = list(paths)
        return f"read_parquet(${key}, hive_partitioning = false)"
    parts = []
    for j, (packed, files) in enumerate(runs):
        params[f"{key}_{j}"] = files
        source = f"read_parquet(${key}_{j}, hive_partitioning = false)"
        turned = ", ".join(f"{_udf(con, schema.field(n).type)}({_quote(n)}) AS "
                           f"{_quote(n)}" for n in packed)
        parts.append(f"SELECT * REPLACE ({turned}) FROM {source}" if packed
                     else f"SELECT * FROM {source}")
    return "(" + " UNION ALL BY NAME ".join(parts) + ")"


def _scan(pl: Any, files: list[str], packed: Sequence[str], schema: pa.Schema,
          **kwargs: Any) -> Any:
    """One ``pl.scan_parquet`` of ``files`` (one layout), its ``packed`` columns as Arrays."""
    lf = pl.scan_parquet(files, glob=False, **kwargs)
    if packed:
        arrays = {n: pl.from_arrow(pa.array([], schema.field(n).type)).dtype for n in packed}
        lf = lf.with_columns([polars_col(pl, n).bin.reinterpret(dtype=d, endianness="little")
                              for n, d in arrays.items()])
    return lf


def scan_parquet_lists(pl: Any, paths: Sequence[str], schema: pa.Schema,
                       row_index: str | None = None) -> Any:
    """``pl.scan_parquet`` over ``paths`` with each tensor stored as bytes as its Array; a
    ``row_index`` column counts rows over all the files, in their order.

    A few runs of one layout are scanned one after the other. Many (null elements spread over
    the shards: each scan costs polars more the more there are, 1,000 took 12-28 s) are
    scanned once per layout and put back in the files' order by a sort, which polars cannot
    push filters or a slice below: such a frame reads every row of the view."""
    runs = layout_runs(paths, schema)
    if len(runs) <= _FEW_RUNS:
        frames = [_scan(pl, files, packed, schema) for packed, files in runs]
        lf = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
        return lf if row_index is None else lf.with_row_index(row_index)
    by_layout: dict[tuple[str, ...], list[str]] = {}
    for packed, files in runs:
        by_layout.setdefault(tuple(packed), []).extend(files)
    place = {path: i for i, path in enumerate(paths)}
    taken = set(schema.names)

    def fresh(name: str) -> str:  # a helper column no user column is called
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    file, at, row = fresh("__dload_file__"), fresh("__dload_at__"), fresh("__dload_row__")
    frames = [_scan(pl, files, packed, schema, include_file_paths=file)
              .with_columns(pl.col(file).replace_strict(place, return_dtype=pl.Int64).alias(at),
                            pl.int_range(pl.len()).over(file).alias(row))
              for packed, files in by_layout.items()]
    lf = pl.concat(frames, how="vertical").sort([at, row]).drop([file, at, row])
    return lf if row_index is None else lf.with_row_index(row_index)
