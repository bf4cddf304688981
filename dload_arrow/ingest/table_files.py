"""One table file's record batches and schema, by format: Parquet, CSV, JSON Lines, and Arrow
IPC (``.arrow``, ``.feather``: what HuggingFace ``datasets.save_to_disk`` writes, stream or file
format; QA migrate59: such a folder was committed as one blob per file, without a word)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO, Any

import pyarrow as pa

from dload_arrow.errors import SchemaError
from dload_arrow.ingest.csv_checks import (
    QuoteCount,
    check_quotes_closed,
    refuse_bytes,
    refuse_repeated_names,
)
from dload_arrow.ingest.empty_columns import blank_text
from dload_arrow.ingest.jsonl import read_json
from dload_arrow.ingest.read_errors import csv_options
from dload_arrow.ingest.table_stream import csv_parse, is_tsv, open_table_file
from dload_arrow.ingest.table_text import checked_batches, csv_convert
from dload_arrow.ingest.tsv_quoting import tsv_quoting
from dload_arrow.store.tensor_layout import restore, restored_schema

__all__ = ["file_batches", "file_schema", "ipc_batches", "ipc_schema"]

_FILE_MAGIC = b"ARROW1"


_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # (pyarrow since 0.15; a batch's zero padding
# would pass for the older 4-zero-byte form)


def _ipc(f: IO[bytes] | Any, path: str) -> Any:
    """An IPC reader of ``f``: the file format (magic ``ARROW1``) or the stream format. A
    stream must end with its end-of-stream marker: pyarrow reads one cut short between two
    batches as complete (QA review59b: a copy that stopped half-way committed half the rows)."""
    head = f.read(len(_FILE_MAGIC))
    f.seek(0, 2)
    size = f.tell()
    f.seek(max(0, size - 8))
    tail = f.read(8)
    f.seek(0)
    if not size:
        raise SchemaError(f"{path!r} is empty (0 bytes), not an Arrow IPC file or stream")
    if head[:4] == b"FEA1":
        raise SchemaError(f"{path!r} is a Feather v1 file, which dload does not read: convert "
                          "it (pyarrow.feather.write_feather(pyarrow.feather.read_table(path), "
                          "new_path)) and commit that")
    # (a stream of before pyarrow 0.15 starts without the 0xFFFFFFFF marker: read as it is)
    if head != _FILE_MAGIC and head[:4] == _EOS[:4] and tail != _EOS:
        raise SchemaError(f"{path!r} is an Arrow IPC stream without its end-of-stream marker: "
                          "cut short (a copy or download that stopped early?); copy it again")
    try:
        return pa.ipc.open_file(f) if head == _FILE_MAGIC else pa.ipc.open_stream(f)
    except (pa.ArrowInvalid, OSError) as e:
        cut = " (it starts as one: cut short?)" if head == _FILE_MAGIC else (
            "" if head[:4] == _EOS[:4] else f" (it starts with {head!r})")
        raise SchemaError(f"{path!r} is not a readable Arrow IPC file or stream{cut}: {e}; "
                          "copy it again, or write it with pyarrow.ipc") from e


def ipc_batches(f: IO[bytes] | Any, path: str) -> Iterator[pa.RecordBatch]:
    """The record batches of an Arrow IPC file or stream."""
    reader = _ipc(f, path)
    if isinstance(reader, pa.ipc.RecordBatchFileReader):
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
    else:
        yield from reader


def ipc_schema(f: IO[bytes] | Any, path: str) -> pa.Schema:
    """The schema of an Arrow IPC file or stream."""
    return _ipc(f, path).schema


def file_batches(path: str, fmt: str, endpoint_url: str | None,
                  text_columns: Sequence[str] = (), key: str | None = None,
                  warned: set[str] | None = None) -> Iterator[pa.RecordBatch]:
    """The record batches of one table file (``warned``: the CSV columns whose codes were
    warned of already, in another file of the same table)."""
    f, size = open_table_file(path, endpoint_url)
    with f:
        if size == 0 and fmt not in ("parquet", "arrow"):  # an empty part file (Spark): no rows
            return
        if fmt == "arrow":  # Arrow IPC (HuggingFace save_to_disk, Feather v2)
            yield from ipc_batches(f, path)
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            # a shard copied out of a root: its tensors stored as bytes become lists again
            yield from map(restore, pq.ParquetFile(f).iter_batches(batch_size=64 * 1024))
        elif fmt == "csv":
            import pyarrow.csv as pcsv

            options = csv_options(size)
            count = QuoteCount(f)
            reader = pcsv.open_csv(count, read_options=options,
                                   parse_options=csv_parse(path, endpoint_url),
                                   convert_options=csv_convert(text_columns, key))
            refuse_bytes(reader.schema, path)
            refuse_repeated_names(reader.schema, path)
            yield from checked_batches(reader, path, fmt, endpoint_url, options, key, warned)
            if not is_tsv(path) or tsv_quoting(path, endpoint_url):  # (else no quoting)
                check_quotes_closed(count, path, endpoint_url)
        else:
            table = read_json(f, path, endpoint_url, text_columns, key)
            yield from checked_batches(iter(table.to_batches()), path, fmt, endpoint_url)


def file_schema(path: str, fmt: str, endpoint_url: str | None,
                 text_columns: Sequence[str] = (), key: str | None = None) -> pa.Schema:
    f, size = open_table_file(path, endpoint_url)
    with f:
        if size == 0 and fmt not in ("parquet", "arrow"):
            return pa.schema([])  # no columns: the others' are null in its (no) rows
        if fmt == "arrow":
            schema = ipc_schema(f, path)
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(f).metadata
            if meta.num_rows == 0:  # a Spark part with no rows: its types add nothing either
                return pa.schema([])
            schema = restored_schema(meta.schema.to_arrow_schema())
        elif fmt == "csv":
            import pyarrow.csv as pcsv

            reader = pcsv.open_csv(f, read_options=csv_options(size),
                                   parse_options=csv_parse(path, endpoint_url),
                                   convert_options=csv_convert(text_columns, key))
            schema = reader.schema
            refuse_bytes(schema, path)
            refuse_repeated_names(schema, path)
            if text_columns:  # the first block decides, as where types are inferred
                schema = blank_text(schema, next(iter(reader), None), text_columns, key)
        else:
            schema = read_json(f, path, endpoint_url, text_columns, key).schema
    return schema.remove_metadata()
