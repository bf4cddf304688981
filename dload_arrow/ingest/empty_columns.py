"""CSV columns with no value: nulls where no file gives the column a value, else ``''``.

A column without a value in any row (every cell empty) is text holding nulls, which later
files and appends can fill; where another file gives it text, its empty cells are ``''``, as
an empty cell of a text column reads. pyarrow tells the first case by inferring the type null.
An append reads the columns its dataset stores as text as text (``007`` stays ``'007'``), so
no type is inferred for them: there a column is empty when its every cell is ``''`` in the
file's first block (the block pyarrow infers types from), and its ``''`` cells become null,
as a commit of the same file stores them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.store.names import KEY_COLUMN

__all__ = ["blank_text", "fill_empty_text", "text_nulls"]


def text_nulls(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its columns of type null (no value anywhere) as nullable strings."""
    return pa.schema([pa.field(f.name, pa.string(), metadata=f.metadata)
                      if pa.types.is_null(f.type) else f for f in schema])


def blank_text(schema: pa.Schema, batch: pa.RecordBatch | None, text_columns: Sequence[str],
               key: str | None = None) -> pa.Schema:
    """``schema`` with the ``text_columns`` (read as text, not inferred) whose every cell is
    empty in ``batch`` (a CSV file's first block; None: the file has no rows) typed null, as
    pyarrow infers such a column when it is not read as text. Keys are never blank."""
    keys = {KEY_COLUMN, key}
    blank = {c for c in text_columns if c not in keys and c in schema.names and (
        batch is None or c not in batch.schema.names
        or _all_empty(batch.column(batch.schema.get_field_index(c))))}
    return pa.schema([f.with_type(pa.null()).with_nullable(True) if f.name in blank else f
                      for f in schema])


def _all_empty(col: pa.Array) -> bool:
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return False
    return bool(pc.all(pc.equal(col, ""), skip_nulls=True, min_count=0).as_py())


def fill_empty_text(batch: pa.RecordBatch, schema: pa.Schema,
                    empty: frozenset[str] | set[str] = frozenset()) -> pa.RecordBatch:
    """A CSV batch's columns of type null (every cell empty) that another file of ``schema``
    gives text, as empty strings, as an empty cell of a text column reads; those in ``empty``
    (no value in any file) stay null: an append casts them to the type its dataset stores. A
    column of ``empty`` an append read as text has its ``''`` cells null, as they stay then."""
    if not any(pa.types.is_null(f.type) or f.name in empty for f in batch.schema):
        return batch
    columns = []
    for f, col in zip(batch.schema, batch.columns, strict=True):
        if f.name in empty and pa.types.is_string(f.type):
            col = pc.if_else(pc.equal(col, ""), pa.scalar(None, f.type), col)
        elif (pa.types.is_null(f.type) and f.name in schema.names and f.name not in empty
              and pa.types.is_string(schema.field(f.name).type)):
            col = pa.array([""] * batch.num_rows, pa.string())
        columns.append(col)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
