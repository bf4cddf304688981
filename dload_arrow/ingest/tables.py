"""Tables: Parquet, CSV and JSON Lines files, or folders of them, as one RecordBatchReader.

Files are read in sorted path order, one after the other, batch by batch (JSON Lines files
are read whole, one file at a time). The first file's schema is the table's; later files are
cast to it, and a file that does not fit raises SchemaError naming it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from dload_arrow.errors import NotFoundError, SchemaError
from dload_arrow.ingest.location import is_remote, open_binary

__all__ = ["TABLE_FORMATS", "open_table", "table_format", "table_files"]

TABLE_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}


def table_format(path: str) -> str | None:
    """``"parquet"``, ``"csv"``, ``"jsonl"`` by extension, else None."""
    lower = path.lower()
    return next((f for ext, f in TABLE_FORMATS.items() if lower.endswith(ext)), None)


def table_files(path: str) -> list[str]:
    """The table files of a file or a folder (recursive, sorted); empty if it holds none."""
    if is_remote(path) or os.path.isfile(path):
        return [path] if table_format(path) else []
    out = []
    for dirpath, _, filenames in os.walk(path):
        out += [os.path.join(dirpath, f) for f in filenames if table_format(f)]
    return sorted(out)


def _file_batches(path: str, fmt: str, endpoint_url: str | None) -> Iterator[pa.RecordBatch]:
    f, _ = open_binary(path, endpoint_url=endpoint_url, block_size=4 << 20)
    with f:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            yield from pq.ParquetFile(f).iter_batches(batch_size=64 * 1024)
        elif fmt == "csv":
            import pyarrow.csv as pcsv

            yield from pcsv.open_csv(f)
        else:
            import pyarrow.json as pjson

            yield from pjson.read_json(f).to_batches()


def open_table(path: str, *, endpoint_url: str | None = None) -> pa.RecordBatchReader:
    """A RecordBatchReader over a table file or folder of them (see the module docstring).

    Args:
        path: a .parquet/.csv/.jsonl file (local or a URL) or a local folder of them.
        endpoint_url: S3 endpoint for remote files.
    """
    files = table_files(path)
    if not files:
        raise NotFoundError(
            f"no Parquet, CSV or JSON Lines files at {path!r} (extensions: "
            f"{', '.join(TABLE_FORMATS)}); check the path"
        )
    formats = {table_format(f) for f in files}
    if len(formats) > 1:
        raise SchemaError(
            f"{path!r} mixes table formats {sorted(str(f) for f in formats)}; commit each "
            "format separately"
        )
    fmt = str(formats.pop())
    first_iter = _file_batches(files[0], fmt, endpoint_url)
    try:
        first = next(first_iter)
    except StopIteration:
        raise NotFoundError(f"{files[0]!r} has no rows; nothing to commit") from None
    except (pa.ArrowInvalid, OSError) as e:
        raise SchemaError(f"cannot read {files[0]!r} as {fmt}: {e}") from e
    schema = first.schema.remove_metadata()

    def batches() -> Iterator[pa.RecordBatch]:
        yield first.replace_schema_metadata(None)
        yield from _rest(first_iter, files[0], fmt)
        for f in files[1:]:
            yield from _rest(_file_batches(f, fmt, endpoint_url), f, fmt)

    def _rest(it: Iterator[pa.RecordBatch], f: str, fmt: str) -> Iterator[pa.RecordBatch]:
        try:
            for b in it:
                yield _cast(b, schema, f)
        except (pa.ArrowInvalid, OSError) as e:
            raise SchemaError(f"cannot read {f!r} as {fmt}: {e}") from e

    return pa.RecordBatchReader.from_batches(schema, batches())


def _cast(batch: pa.RecordBatch, schema: pa.Schema, where: Any) -> pa.RecordBatch:
    batch = batch.replace_schema_metadata(None)
    if batch.schema.equals(schema):
        return batch
    try:
        return batch.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError, ValueError) as e:
        raise SchemaError(
            f"{where!r} does not fit the schema of the first file ({schema}): {e}"
        ) from e
