"""Pack record batches into content-addressed zstd Parquet shards.

Row groups are cut by bytes (``row_group_size``) from exact per-row sizes, and shards by
their encoded size (``shard_size``), so the same rows with the same settings give the same
bytes however the input was chunked. That is what makes a second commit upload nothing.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dload_arrow.errors import SchemaError
from dload_arrow.store.bounds import column_bounds, shard_bounds
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.row_sizes import row_sizes
from dload_arrow.store.tensor_layout import (
    has_null_items,
    packable,
    statistics_columns,
    stored_schema,
    to_stored,
)
from dload_arrow.store.time_range import check_nested_time_range, check_time_range

__all__ = ["DEFAULT_ROW_GROUP_SIZE", "DEFAULT_SHARD_SIZE", "ShardData", "digest_of", "is_scalar",
           "write_shards"]

DEFAULT_SHARD_SIZE = 128 * 2**20
DEFAULT_ROW_GROUP_SIZE = 2 * 2**20
ZSTD_LEVEL = 3


@dataclass
class ShardData:
    """One encoded shard and everything the manifest records about it."""

    data: pa.Buffer
    digest: str
    nbytes: int
    rows: int
    rg_rows: list[int]
    rg_offsets: list[int]
    rg_bytes: list[int]
    footer_offset: int
    key_min: str
    key_max: str
    rg_key_min: list[str]
    rg_key_max: list[str]
    keys_sorted: bool
    # column -> (min, max, nulls) for the shard and per row group
    stats: dict[str, tuple[Any, Any, int]] = field(default_factory=dict)
    rg_stats: dict[str, list[tuple[Any, Any, int]]] = field(default_factory=dict)
    # the other columns (binary, tensors, lists, ...) -> null rows per row group
    rg_nulls: dict[str, list[int]] = field(default_factory=dict)


def is_scalar(typ: pa.DataType) -> bool:
    """Columns the manifest keeps min/max statistics for (durations and intervals have no
    min/max kernel: they are stored without statistics)."""
    return (
        pa.types.is_integer(typ)
        or pa.types.is_floating(typ)
        or pa.types.is_boolean(typ)
        or pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_timestamp(typ)
        or pa.types.is_date(typ)
        or pa.types.is_time(typ)
    )


def _row_groups(batches: Iterable[pa.RecordBatch], target: int) -> Iterator[pa.Table]:
    pending: list[pa.RecordBatch] = []
    sizes: list[np.ndarray] = []
    total = 0
    for batch in batches:
        pending.append(batch)
        s = row_sizes(batch)
        sizes.append(s)
        total += int(s.sum())
        while total >= target:
            cum = np.cumsum(np.concatenate(sizes))
            n = int(np.searchsorted(cum, target)) + 1
            table = pa.Table.from_batches(pending)
            yield _whole(table.slice(0, n))
            rest = table.slice(n)
            pending = [b for b in rest.to_batches() if b.num_rows]
            sizes = [np.concatenate(sizes)[n:]]
            total = int(sizes[0].sum())
    if pending:
        yield _whole(pa.Table.from_batches(pending))


def _whole(rows: pa.Table) -> pa.Table:
    """A row group's table in one chunk a column: Parquet pages large values at the input's
    chunk edges, so a row group spanning two batches was written to other bytes (another id
    for the same rows committed in other batches: QA lowmem66's byte-sized sample chunks)."""
    return rows.combine_chunks() if any(c.num_chunks > 1 for c in rows.columns) else rows


class _Open:
    def __init__(self, schema: pa.Schema, first: pa.Table) -> None:
        self.sink = pa.BufferOutputStream()
        dict_cols = [f.name for f in schema if is_scalar(f.type) and f.name != KEY_COLUMN]
        # tensors as bytes (store/tensor_layout.py), unless the first row group holds a null
        # element: then this shard keeps that column a list
        self.packed = [n for n in packable(schema) if not has_null_items(first.column(n))]
        self.stored = stored_schema(schema, self.packed)
        self.writer = pq.ParquetWriter(
            self.sink,
            self.stored,
            compression="zstd",
            compression_level=ZSTD_LEVEL,
            use_dictionary=dict_cols or False,
            write_page_index=True,
            write_page_checksum=True,  # what a range read checks (read/random_access.py)
            write_statistics=statistics_columns(self.stored),
            store_schema=True,
        )
        self.scalar = [f.name for f in schema if is_scalar(f.type) and f.name != KEY_COLUMN]
        self.rg_rows: list[int] = []
        self.rg_key_min: list[str] = []
        self.rg_key_max: list[str] = []
        self.rg_stats: dict[str, list[tuple[Any, Any, int]]] = {c: [] for c in self.scalar}
        self.rg_nulls: dict[str, list[int]] = {
            f.name: [] for f in schema if f.name != KEY_COLUMN and f.name not in self.scalar}

    def fits(self, table: pa.Table) -> bool:
        """Whether ``table``'s tensors can go into this shard as its first row group went."""
        return not any(has_null_items(table.column(n)) for n in self.packed)

    def add(self, table: pa.Table) -> None:
        try:
            self.writer.write_table(to_stored(table, self.stored),
                                    row_group_size=table.num_rows)
        except pa.ArrowInvalid as e:  # a null where the schema says "not null"
            if "non-nullable" not in str(e):
                raise
            raise SchemaError(
                f"{e} (its field says nullable=False, from schema= or the table the dataset "
                "was committed from): give every sample a value there, or commit with the "
                "field nullable (pa.field(name, type) is nullable by default)") from None
        keys = table.column(KEY_COLUMN)
        kmin, kmax, _ = column_bounds(keys, long_text=True)
        self.rg_rows.append(table.num_rows)
        self.rg_key_min.append(kmin)
        self.rg_key_max.append(kmax)
        for c in self.scalar:
            check_time_range(c, table.column(c))
            self.rg_stats[c].append(column_bounds(table.column(c)))
        for c, nulls in self.rg_nulls.items():
            check_nested_time_range(c, table.column(c))
            nulls.append(table.column(c).null_count)

    def finish(self, keys_sorted: bool, digest: bool = True) -> ShardData:
        self.writer.close()
        buf = self.sink.getvalue()
        meta = pq.read_metadata(pa.BufferReader(buf))
        offsets, lengths = [], []
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            start = min(
                (c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset)
                for c in (rg.column(j) for j in range(rg.num_columns))
            )
            end = max(
                (c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset)
                + c.total_compressed_size
                for c in (rg.column(j) for j in range(rg.num_columns))
            )
            offsets.append(int(start))
            lengths.append(int(end - start))
        footer_len = struct.unpack("<I", buf.slice(buf.size - 8, 4).to_pybytes())[0]
        stats = {c: shard_bounds(per, self.rg_rows) for c, per in self.rg_stats.items()}
        return ShardData(
            data=buf,
            digest=digest_of(buf) if digest else "",
            nbytes=buf.size,
            rows=sum(self.rg_rows),
            rg_rows=self.rg_rows,
            rg_offsets=offsets,
            rg_bytes=lengths,
            footer_offset=buf.size - 8 - footer_len,
            key_min=min(self.rg_key_min),
            key_max=max(self.rg_key_max),
            rg_key_min=self.rg_key_min,
            rg_key_max=self.rg_key_max,
            keys_sorted=keys_sorted,
            stats=stats,
            rg_stats=self.rg_stats,
            rg_nulls=self.rg_nulls,
        )


def digest_of(data: pa.Buffer) -> str:
    """A shard's content address: the sha256 of its bytes, in hex."""
    return hashlib.sha256(memoryview(data)).hexdigest()


def _sorted(keys: pa.ChunkedArray | pa.Array) -> bool:
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if len(arr) < 2:
        return True
    return bool(pc.all(pc.less(arr.slice(0, len(arr) - 1), arr.slice(1))).as_py())


def write_shards(
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    *,
    shard_size: int = DEFAULT_SHARD_SIZE,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    digest: bool = True,
    on_row_group: Callable[[int, int], None] | None = None,
) -> Iterator[ShardData]:
    """Encode ``batches`` (``__key__`` first) into shards of about ``shard_size`` bytes.

    ``digest=False`` leaves each shard's ``digest`` empty, for the caller to fill with
    :func:`digest_of` on another thread (hashing runs without the GIL, beside the next
    shard's encoding). ``on_row_group(rows, nbytes)`` is called as each row group is encoded
    (and with 0 rows for a shard's footer): the bytes it was given add up to the shards'."""
    current: _Open | None = None
    in_order = True
    told = 0  # bytes of the open shard given to on_row_group
    for table in _row_groups(batches, row_group_size):
        if current is not None and not current.fits(table):  # a null element: lists now
            yield _finished(current, in_order, digest, on_row_group, told)
            current = None
        if current is None:
            current = _Open(schema, table)
            in_order = True
            told = 0
        if current.rg_key_max and table.num_rows:
            in_order = in_order and current.rg_key_max[-1] < table.column(KEY_COLUMN)[0].as_py()
        in_order = in_order and _sorted(table.column(KEY_COLUMN))
        current.add(table)
        if on_row_group is not None:
            on_row_group(table.num_rows, current.sink.tell() - told)
            told = current.sink.tell()
        if current.sink.tell() >= shard_size:
            yield _finished(current, in_order, digest, on_row_group, told)
            current = None
    if current is not None and current.rg_rows:
        yield _finished(current, in_order, digest, on_row_group, told)


def _finished(current: _Open, in_order: bool, digest: bool,
              on_row_group: Callable[[int, int], None] | None, told: int) -> ShardData:
    shard = current.finish(in_order, digest)
    if on_row_group is not None:
        on_row_group(0, shard.nbytes - told)  # the footer
    return shard
