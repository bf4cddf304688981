"""Tensor columns stored as fixed-width bytes in a shard: Parquet decodes them at memory speed.

A tensor column is an Arrow ``fixed_size_list`` of numbers. Parquet has no fixed-size list: it
writes a list, and gives every element a repetition and a definition level, which the reader
decodes one by one. pyarrow turns 27,648-byte images stored so into arrays at 115 MB/s; the
same bytes in a FIXED_LEN_BYTE_ARRAY column decode at 4.2 GB/s, 36 times faster, and the file
is 27% smaller (bench/notes/speed-work.md, "Twenty-fifth session"; random floats, which
zstd barely compresses, about the same size).

So a shard stores each such column as ``fixed_size_binary(list_size * item width)``, its field
marked with :data:`LAYOUT_KEY` (the list's item type, as JSON), and every reader of shards
turns it back, without copying, into the list type the dataset's schema has: the manifest,
``ds.schema`` and every batch a user sees keep the real Arrow type. Elements must be numbers
of a whole number of bytes (ints, floats; not bools, which Arrow packs 8 to a byte) and no
element may be null (bytes cannot say "null"): a row group whose tensor holds a null element
starts a shard that keeps that column a list (store/shard.py). Rows may be null.

Shards written before this layout hold lists; readers take both, a dataset may mix them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import TypeVar

import pyarrow as pa

__all__ = ["LAYOUT_KEY", "has_null_items", "packable", "packable_type", "packed_names",
           "restore", "restore_array", "restored_reader", "restored_schema",
           "statistics_columns", "stored_schema", "tensor_width", "to_stored"]

LAYOUT_KEY = b"dload.layout"

_Data = TypeVar("_Data", pa.Table, pa.RecordBatch)


def packable_type(typ: pa.DataType) -> bool:
    """Whether a column of type ``typ`` is a tensor a shard may store as bytes."""
    if not pa.types.is_fixed_size_list(typ):
        return False
    item = typ.value_type
    return (pa.types.is_integer(item) or pa.types.is_floating(item)) and \
        item.bit_width % 8 == 0 and typ.list_size > 0


def packable(schema: pa.Schema) -> list[str]:
    """The names of ``schema``'s tensor columns a shard may store as bytes."""
    return [f.name for f in schema if packable_type(f.type)]


def has_null_items(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a tensor column holds a null element (not a null row): bytes cannot keep it."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return any(chunk.values.null_count and chunk.flatten().null_count for chunk in chunks)


def tensor_width(typ: pa.DataType) -> int:
    """Bytes of one tensor of the fixed-size list type ``typ``."""
    return int(typ.list_size * typ.value_type.bit_width // 8)


def _mark(field: pa.Field) -> pa.Field:
    item = field.type.value_field
    note = json.dumps({"type": str(item.type), "name": item.name, "nullable": item.nullable})
    meta = dict(field.metadata or {})
    meta[LAYOUT_KEY] = note.encode()
    return pa.field(field.name, pa.binary(tensor_width(field.type)), field.nullable, meta)


def _unmarked(field: pa.Field) -> pa.Field:
    """``field`` without a layout mark (one a table read from a shard by hand carried in)."""
    if not field.metadata or LAYOUT_KEY not in field.metadata:
        return field
    meta = {k: v for k, v in field.metadata.items() if k != LAYOUT_KEY}
    return field.with_metadata(meta) if meta else field.remove_metadata()


def stored_schema(schema: pa.Schema, names: Iterable[str]) -> pa.Schema:
    """``schema`` with the columns ``names`` as the marked fixed-width binary a shard holds
    (and no other column marked: only this writer's marks may tell readers to convert)."""
    packed = set(names)
    return pa.schema([_mark(f) if f.name in packed else _unmarked(f) for f in schema],
                     metadata=schema.metadata)


def statistics_columns(stored: pa.Schema) -> bool | list[str]:
    """``write_statistics`` for a shard of ``stored``: every column but raw bytes, the tensors
    stored as bytes and the blobs (binary leaves that are no text, JSON or decimal). Their
    min and max are whole values nothing prunes on: a 768-float embedding's 3 KB twice per
    row group and page, a footer 27 times larger; a 200 MB video copied as the writer's
    running min and max, six times its size in memory while it is encoded."""
    if not any(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_nested(t)
               or pa.types.is_fixed_size_binary(t) for t in stored.types):
        return True
    return list(_with_statistics(stored))


@functools.lru_cache(maxsize=64)
def _with_statistics(stored: pa.Schema) -> tuple[str, ...]:
    import pyarrow.parquet as pq

    packed = set(packed_names(stored))
    sink = pa.BufferOutputStream()  # the leaves' dotted paths, as the writer names them
    pq.ParquetWriter(sink, stored).close()  # (no table: extension types have no empty one)
    leaves = pq.read_metadata(pa.BufferReader(sink.getvalue())).schema
    return tuple(
        c.path for c in (leaves.column(i) for i in range(len(leaves)))
        if c.path not in packed
        and not (c.physical_type == "BYTE_ARRAY" and c.logical_type.type == "NONE"))


def _pack(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    child = arr.values  # the whole child: a sliced list keeps its offset on itself
    start = child.offset * typ.value_type.bit_width // 8
    data = child.buffers()[1].slice(start)
    return pa.Array.from_buffers(pa.binary(tensor_width(typ)), len(arr), [arr.buffers()[0], data],
                                 arr.null_count, arr.offset)


def to_stored(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with each column ``schema`` (from :func:`stored_schema`) marks as bytes
    viewed as those bytes (no copy). The columns must hold no null element."""
    columns = []
    for i, field in enumerate(schema):
        column = table.column(i)
        if field.metadata and LAYOUT_KEY in field.metadata:
            typ = table.schema.field(i).type
            column = pa.chunked_array([_pack(c, typ) for c in column.chunks], field.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _list_type(field: pa.Field) -> pa.DataType:
    note = json.loads(field.metadata[LAYOUT_KEY])
    item = pa.field(note["name"], pa.type_for_alias(note["type"]), note["nullable"])
    return pa.list_(item, field.type.byte_width * 8 // item.type.bit_width)


def restore_array(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    """A stored tensor column's chunk (fixed-width binary) as the list type ``typ``, no copy."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([restore_array(c, typ) for c in arr.chunks], typ)
    if not pa.types.is_fixed_size_binary(arr.type):  # DuckDB hands BLOBs as variable binary
        arr = arr.cast(pa.binary(tensor_width(typ)))
    items = (arr.offset + len(arr)) * typ.list_size
    child = pa.Array.from_buffers(typ.value_type, items, [None, arr.buffers()[1]])
    return pa.Array.from_buffers(typ, len(arr), [arr.buffers()[0]], arr.null_count,
                                 arr.offset, children=[child])


def _is_packed(field: pa.Field) -> bool:
    if not (field.metadata and LAYOUT_KEY in field.metadata and
            pa.types.is_fixed_size_binary(field.type)):
        return False
    try:
        typ = _list_type(field)
    except (ValueError, KeyError, TypeError):  # not a mark this writer made
        return False
    return typ.list_size * typ.value_type.bit_width == field.type.byte_width * 8


def packed_names(schema: pa.Schema) -> list[str]:
    """The columns of a shard's stored ``schema`` that hold a tensor as bytes."""
    return [f.name for f in schema if _is_packed(f)]


def _restored_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, _list_type(field), field.nullable, _unmarked(field).metadata)


def restored_schema(schema: pa.Schema) -> pa.Schema:
    """A shard's stored ``schema`` with its tensors stored as bytes as their list types."""
    return pa.schema([_restored_field(f) if _is_packed(f) else f for f in schema],
                     metadata=schema.metadata)


def restored_reader(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """``reader`` with the tensors of shard data read by hand (``pq.read_table`` of a shard)
    as their lists again; other readers unchanged."""
    if not packed_names(reader.schema):
        return reader
    return pa.RecordBatchReader.from_batches(restored_schema(reader.schema),
                                             (restore(b) for b in reader))


def restore(data: _Data) -> _Data:
    """``data`` read from a shard with its tensor columns as their lists again (no copy)."""
    schema = data.schema
    packed = {i for i, f in enumerate(schema) if _is_packed(f)}
    if not packed:
        return data
    fields = [_restored_field(f) if i in packed else f for i, f in enumerate(schema)]
    columns = [restore_array(data.column(i), fields[i].type) if i in packed else data.column(i)
               for i in range(len(fields))]
    out = pa.schema(fields, metadata=schema.metadata)
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(columns, schema=out)
    return pa.Table.from_arrays(columns, schema=out)
