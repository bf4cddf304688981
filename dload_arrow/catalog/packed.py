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
        try:
            packed = packed_names(pq.read_schema(path))
        except (OSError, pa.ArrowInvalid) as e:
            raise OSError(f"{path}: {e}") from e
        if runs and runs[-1][0] == packed:
            runs[-1][1].append(path)
        else:
            runs.append((packed, [path]))
    return runs


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


def scan_parquet_lists(pl: Any, paths: Sequence[str], schema: pa.Schema,
                       row_index: str | None = None) -> Any:
    """``pl.scan_parquet`` over ``paths`` with each tensor stored as bytes as its Array; a
    ``row_index`` column counts rows over all the files, in their order."""
    frames = []
    for packed, files in layout_runs(paths, schema):
        lf = pl.scan_parquet(files, glob=False)
        if packed:
            arrays = {n: pl.from_arrow(pa.array([], schema.field(n).type)).dtype for n in packed}
            lf = lf.with_columns([polars_col(pl, n).bin.reinterpret(dtype=d,
                                                                    endianness="little")
                                  for n, d in arrays.items()])
        frames.append(lf)
    lf = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
    return lf if row_index is None else lf.with_row_index(row_index)
