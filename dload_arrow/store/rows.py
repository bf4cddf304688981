"""Turn what users commit (pairs, tables, readers, DataFrames) into record batches.

Every batch that leaves here has ``__key__`` (string, not null) as its first column and the
dataset's sample schema. numpy arrays become fixed-size lists with their shape in the field
metadata (``dload.shape``), so tensors round-trip without opaque bytes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import inferred_type, string_array, typed_array
from dload_arrow.errors import SchemaError, shown
from dload_arrow.store.lossless import check_whole_numbers
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["SHAPE_META", "field_shape", "to_batches"]

SHAPE_META = b"dload.shape"
_PAIR_CHUNK = 1024


def field_shape(field: pa.Field) -> tuple[int, ...] | None:
    """The tensor shape recorded on a fixed-size-list field, or None."""
    meta = field.metadata or {}
    if SHAPE_META in meta:
        return tuple(json.loads(meta[SHAPE_META]))
    return None


def _tensor_field(key: str, name: str, arr: np.ndarray) -> pa.Field:
    size = int(np.prod(arr.shape)) if arr.ndim else 1
    if arr.dtype.kind not in "biuf":
        raise SchemaError(
            f"sample {key!r}, column {name!r}: a numpy array of dtype {arr.dtype} is not a "
            "tensor dload can store (numbers and booleans only); pass strings or bytes as a "
            "list, or one value per sample"
        )
    if size == 0:
        raise SchemaError(
            f"sample {key!r}, column {name!r}: a tensor of shape {arr.shape} holds no "
            "element, and a fixed-size column of zero-size tensors cannot be stored; give "
            "the column a non-empty shape, or use None for a missing value"
        )
    typ = pa.list_(pa.from_numpy_dtype(arr.dtype), size)
    return pa.field(name, typ, metadata={SHAPE_META: json.dumps(list(arr.shape)).encode()})


def _infer_schema(rows: list[tuple[str, Mapping[str, Any]]]) -> pa.Schema:
    first_key, first = rows[0]
    fields = [pa.field(KEY_COLUMN, pa.string(), nullable=False)]
    for col in first:
        if col == KEY_COLUMN:
            raise SchemaError(f"sample {first_key!r}: column name {KEY_COLUMN!r} is reserved")
        found = next(((k, r[col]) for k, r in rows if r.get(col) is not None), None)
        value = None if found is None else found[1]
        if isinstance(value, np.ndarray):
            assert found is not None
            fields.append(_tensor_field(found[0], col, value))
        elif value is None:
            fields.append(pa.field(col, pa.null()))
        else:
            try:
                typ = inferred_type([r.get(col) for _, r in rows])
            except OverflowError as e:
                big = next(((k, v) for k, r in rows if isinstance(v := r.get(col), int)
                            and not -(2**63) <= v < 2**63), (rows[0][0], value))
                raise SchemaError(
                    f"sample {big[0]!r}, column {col!r}: integer {shown(big[1])} is outside "
                    "the range of a 64-bit integer column (other values are signed); store it "
                    "as a string or a float"
                ) from e
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                raise SchemaError(
                    f"sample {_first_misfit(rows, col, value)!r}, column {col!r}: its value "
                    f"does not fit the type of earlier samples ({e}); fix the sample or pass "
                    "schema= to say which type you want"
                ) from e
            fields.append(pa.field(col, typ))
    return pa.schema(fields)


def _first_misfit(rows: list[tuple[str, Mapping[str, Any]]], col: str, first: Any) -> str:
    typ = pa.array([first]).type
    for key, r in rows:
        try:
            pa.array([r.get(col)], type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError, OverflowError):
            return key
    return rows[-1][0]


def _column(rows: list[tuple[str, Mapping[str, Any]]], field: pa.Field) -> pa.Array:
    values = [r.get(field.name) for _, r in rows]
    if field_shape(field) is not None:
        values = [None if v is None else np.asarray(v).reshape(-1) for v in values]
    check_whole_numbers(rows, field, values)
    try:
        return typed_array(values, field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError, OverflowError) as e:
        for (key, _), v in zip(rows, values, strict=False):
            try:
                pa.array([v], type=field.type)
            except Exception:
                raise SchemaError(
                    f"sample {key!r}, column {field.name!r}: value {shown(v)} does not fit "
                    f"type {field.type}; fix the sample or pass schema= with a wider type"
                ) from e
        raise SchemaError(f"column {field.name!r} does not fit type {field.type}: {e}") from e



def _pairs_to_batches(
    pairs: Iterable[tuple[str, Mapping[str, Any]]], schema: pa.Schema | None
) -> Iterator[pa.RecordBatch]:
    chunk: list[tuple[str, Mapping[str, Any]]] = []
    for item in pairs:
        try:
            key, sample = item
        except (TypeError, ValueError) as e:
            raise SchemaError(
                f"expected (key, {{column: value}}) pairs, got {shown(item)}"
            ) from e
        if not isinstance(key, str) or not key:
            raise SchemaError(f"sample key {key!r} must be a non-empty string")
        if not isinstance(sample, Mapping):
            raise SchemaError(f"sample {key!r}: expected a dict of columns, got {type(sample)}")
        chunk.append((key, sample))
        if len(chunk) >= _PAIR_CHUNK:
            schema = schema or _infer_schema(chunk)
            yield _pairs_batch(chunk, schema)
            chunk = []
    if chunk:
        schema = schema or _infer_schema(chunk)
        yield _pairs_batch(chunk, schema)


def _pairs_batch(rows: list[tuple[str, Mapping[str, Any]]], schema: pa.Schema) -> pa.RecordBatch:
    names = set(schema.names)
    for key, sample in rows:
        extra = set(sample) - names
        if extra:
            raise SchemaError(
                f"sample {key!r} has columns {sorted(extra)} that the schema lacks "
                f"(schema columns: {schema.names[1:]})"
            )
    keys = typed_array([k for k, _ in rows], pa.string())
    arrays = [keys, *[_column(rows, f) for f in schema][1:]]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _with_key(schema: pa.Schema | None, key: str | None, table_schema: pa.Schema) -> str | None:
    if key is not None and key not in table_schema.names:
        raise SchemaError(
            f"key column {key!r} not found; the table has columns {table_schema.names}"
        )
    if key is None and KEY_COLUMN in table_schema.names:
        return KEY_COLUMN
    if key is not None and key != KEY_COLUMN and KEY_COLUMN in table_schema.names:
        raise SchemaError(
            f"the table has a {KEY_COLUMN!r} column and key={key!r} names another: which is "
            f"the key? Drop key= to use {KEY_COLUMN!r}, or drop the {KEY_COLUMN!r} column"
        )
    return key


def _table_batches(
    batches: Iterable[pa.RecordBatch], key: str | None, schema: pa.Schema | None,
    offset: int = 0,
) -> Iterator[pa.RecordBatch]:
    first = offset  # generated keys continue from the rows already stored
    target: pa.Schema | None = schema
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if key is None:
            # Generated keys: zero-padded row numbers, so they sort in commit order.
            keys = string_array([f"{i:012d}" for i in range(offset, offset + batch.num_rows)])
        else:
            col = batch.column(key)
            keys = col.cast(pa.string()) if col.type != pa.string() else col
            if keys.null_count:
                raise SchemaError(f"key column {key!r} has null values; every sample needs a key")
        offset += batch.num_rows
        rest = [(f.name, batch.column(i)) for i, f in enumerate(batch.schema) if f.name != key]
        fields = [pa.field(KEY_COLUMN, pa.string(), nullable=False)] + [
            batch.schema.field(n) for n, _ in rest
        ]
        out = pa.RecordBatch.from_arrays([keys] + [a for _, a in rest], schema=pa.schema(fields))
        if target is None:
            target = out.schema
        elif out.schema != target:
            try:
                out = out.cast(target)
            except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
                raise SchemaError(
                    f"batch at row {offset - first - batch.num_rows} does not fit the schema: "
                    f"{e}"
                ) from e
        yield out


def to_batches(
    samples: Any, *, key: str | None = None, schema: pa.Schema | None = None,
    append_to: str | None = None, key_offset: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Record batches with ``__key__`` first from any accepted input.

    Accepted: an iterable of ``(key, {column: value})`` pairs, a pyarrow Table, RecordBatch
    or RecordBatchReader, a polars or pandas DataFrame (``key=`` names the key column; without
    it an existing ``__key__`` column is used, else keys are generated row numbers, from
    ``key_offset``). Appended to dataset ``append_to`` (of ``schema``), a table may lack
    columns (null in its rows) but not have others (``store/conform.py``).
    """
    if schema is not None and (not schema.names or schema.names[0] != KEY_COLUMN):
        schema = pa.schema([pa.field(KEY_COLUMN, pa.string(), nullable=False), *list(schema)])
    mod = type(samples).__module__
    if mod.startswith("polars"):
        if not hasattr(samples, "to_arrow") and hasattr(samples, "collect"):
            samples = samples.collect()  # a LazyFrame: run the query first
        samples = samples.to_arrow()
    elif mod.startswith("pandas"):
        _warn_dropped_index(samples)
        samples = pa.Table.from_pandas(samples, preserve_index=False)
    if isinstance(samples, pa.RecordBatch):
        samples = pa.Table.from_batches([samples])
    if isinstance(samples, pa.Table):
        samples = pa.RecordBatchReader.from_batches(samples.schema, samples.to_batches())
    if isinstance(samples, pa.RecordBatchReader):
        if append_to is not None and schema is not None:
            from dload_arrow.store.conform import conform_to

            samples = conform_to(samples, schema, key, where="the appended table",
                                 dataset=append_to, files=False)
        k = _with_key(schema, key, samples.schema)
        return _table_batches(samples, k, schema, key_offset)
    if isinstance(samples, (str, bytes)) or not isinstance(samples, Iterable):
        raise SchemaError(
            f"cannot commit a {type(samples).__name__}: pass (key, dict) pairs, a pyarrow "
            "Table/RecordBatchReader, or a polars/pandas DataFrame"
        )
    return _pairs_to_batches(samples, schema)


def _warn_dropped_index(df: Any) -> None:
    """Warn when a pandas DataFrame's index carries data (not 0..n-1): it is not stored."""
    import pandas as pd

    index = df.index
    plain = isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1
    if not plain or index.name is not None:
        warnings.warn(
            f"the DataFrame's index ({type(index).__name__}"
            f"{f' {index.name!r}' if index.name is not None else ''}) is not stored: keys come "
            "from key= or a __key__ column, else row numbers. To keep it, pass "
            "df.reset_index() (and key='<its name>' to make it the keys)",
            stacklevel=5,  # the caller of Repository.commit / append
        )
