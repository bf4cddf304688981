"""Turn what users commit (pairs, tables, readers, DataFrames) into record batches.

Every batch that leaves here has ``__key__`` (string, not null) as its first column and the
dataset's sample schema. numpy arrays become fixed-size lists with their shape in the field
metadata (``dload.shape``), so tensors round-trip without opaque bytes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import string_array
from dload_arrow.errors import SchemaError, shown, user_warner
from dload_arrow.store.key_index import check_unique
from dload_arrow.store.key_text import key_text
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.pair_checks import refuse_shapes
from dload_arrow.store.tensor_layout import restored_reader

if TYPE_CHECKING:
    from dload_arrow.store.table_columns import CodesSeen

__all__ = ["SHAPE_META", "field_shape", "to_batches"]

SHAPE_META = b"dload.shape"
_VIEWS_PLAIN = {pa.binary_view(): pa.binary(), pa.string_view(): pa.string()}


def field_shape(field: pa.Field) -> tuple[int, ...] | None:
    """The tensor shape recorded on a fixed-size-list field, or None."""
    meta = field.metadata or {}
    if SHAPE_META in meta:
        return tuple(json.loads(meta[SHAPE_META]))
    return None


def _with_key(schema: pa.Schema | None, key: str | None, table_schema: pa.Schema) -> str | None:
    if key is not None and not isinstance(key, str):
        raise SchemaError(f"key={key!r}: give the key column's name as a str, got "
                          f"{type(key).__name__}; the table has columns {table_schema.names}")
    if key is not None and key not in table_schema.names:
        raise SchemaError(
            f"key column {key!r} not found; the table has columns {table_schema.names}"
        )
    if key is None and KEY_COLUMN in table_schema.names:
        return KEY_COLUMN
    if key is not None and key != KEY_COLUMN and KEY_COLUMN in table_schema.names:
        raise SchemaError(
            f"the table has a {KEY_COLUMN!r} column and key={key!r} (--key-column) names "
            f"another: which is the key? Drop key= (--key-column) to use {KEY_COLUMN!r}, or "
            f"drop the {KEY_COLUMN!r} column"
        )
    return key


KeyOffset = int | Callable[[], int]
"""The first generated row-number key, or a function giving it: called only when a key is
generated (an append's search of the stored keys costs reads; QA cliffs56)."""


def key_number(offset: KeyOffset) -> int:
    """``offset``'s value (a function's, memoized by the caller)."""
    return offset() if callable(offset) else offset


def _table_batches(
    batches: Iterable[pa.RecordBatch], key: str | None, schema: pa.Schema | None,
    first_key: KeyOffset = 0, *, codes: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The batches as stored; ``codes`` (a commit's, not an append's): CodesSeen's warning."""
    from dload_arrow.store.table_columns import CodesSeen  # (it imports this module)

    return _stored(batches, key, schema, first_key, CodesSeen(user_warner()) if codes else None)


def _stored(batches: Iterable[pa.RecordBatch], key: str | None, schema: pa.Schema | None,
            first_key: KeyOffset, codes: CodesSeen | None) -> Iterator[pa.RecordBatch]:
    from dload_arrow.store.table_columns import check_text, storable  # (it imports this)

    offset = 0  # rows so far
    target: pa.Schema | None = schema
    for batch in batches:
        if batch.num_rows == 0:
            continue
        check_text(batch, key)  # (before any value of it is read; the key's: key_text)
        if key is None:
            # Generated keys: zero-padded row numbers, so they sort in commit order, from the
            # rows already stored.
            at = key_number(first_key) + offset
            keys = string_array([f"{i:012d}" for i in range(at, at + batch.num_rows)])
        else:
            keys = key_text(batch.column(key), key, offset)
            if keys.null_count:
                raise SchemaError(f"key column {key!r} has null values; every sample needs a key")
            # refused as keys of samples and pairs too (pc.index would import pandas)
            lengths = pc.utf8_length(keys)
            if len(lengths) and pc.min(lengths).as_py() == 0:
                empty = lengths.to_pylist().index(0)
                raise SchemaError(f"key column {key!r}, row {offset + empty}: an empty "
                                  "key; every sample needs a non-empty key")
        if codes is not None:
            codes.add(batch)
        offset += batch.num_rows
        rest = [storable(f, batch.column(i)) for i, f in enumerate(batch.schema)
                if f.name != key]
        fields = [pa.field(KEY_COLUMN, pa.string(), nullable=False)] + [f for f, _ in rest]
        out = pa.RecordBatch.from_arrays([keys] + [a for _, a in rest], schema=pa.schema(fields))
        if target is None:
            target = out.schema
        elif not out.schema.equals(target, check_metadata=True):  # (a tensor's shape too)
            out = _cast_batch(out, target, offset - batch.num_rows, schema is not None)
        yield out
    if codes is not None:
        codes.finish()


def _refuse_extra(out: pa.RecordBatch, target: pa.Schema, at: int) -> None:
    """Refuse a column ``target`` lacks (fit_batch orders the others by name and makes the
    ones ``out`` lacks null, as for samples lacking them)."""
    extra = [n for n in out.schema.names if n not in target.names]
    if extra:
        raise SchemaError(f"batch at row {at}: column {extra[0]!r} is not in schema= "
                          f"(columns: {target.names[1:]}); add it there, or drop it")


def _cast_batch(out: pa.RecordBatch, target: pa.Schema, at: int, stated: bool) -> Any:
    """``out`` (the batch of rows from ``at``) cast to ``target``, column by column, with the
    checks of an append (text is not parsed, floats do not overflow to inf)."""
    from dload_arrow.store.conform import ColumnMismatch, fit_batch  # it imports this module

    try:
        _refuse_extra(out, target, at)
        return fit_batch(out, target, times_from=stated)  # (schema=: the units stated)
    except ColumnMismatch as e:
        raise SchemaError(
            f"batch at row {at}: column {e.name!r} is {e.got}, and the schema says {e.want}; "
            f"{e.reason}. Cast the column to {e.want} in the input, or change schema="
        ) from e
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as e:
        raise SchemaError(f"batch at row {at} does not fit the schema: {e}") from e


def to_batches(
    samples: Any, *, key: str | None = None, schema: pa.Schema | None = None,
    append_to: str | None = None, key_offset: KeyOffset = 0,
) -> Iterator[pa.RecordBatch]:
    """Record batches with ``__key__`` first from any accepted input.

    Accepted: an iterable of sample dicts or of ``(key, {column: value})`` pairs
    (``store/pairs.py``), a pyarrow Table, RecordBatch or RecordBatchReader, a polars or
    pandas DataFrame (``key=`` names the key column; without it an existing ``__key__``
    column is used, else keys are generated row numbers, from ``key_offset``). Appended to
    dataset ``append_to`` (of ``schema``), a table may lack columns (null in its rows) but
    not have others (``store/conform.py``).
    """
    if schema is not None and not isinstance(schema, pa.Schema):
        raise SchemaError(
            f"schema= must be a pyarrow Schema, got {type(schema).__name__} {shown(schema)}: "
            "write pa.schema({'x': pa.int64()}) (or pa.schema([('x', pa.int64())]))"
        )
    if schema is not None:
        from dload_arrow.store.schema_check import check_schema_arg  # it imports this module

        check_schema_arg(schema, key if append_to is None else None)  # (an append's own check)
    if schema is not None:  # the key field as every commit stores it (not null), and
        schema = pa.schema([pa.field(KEY_COLUMN, pa.string(), nullable=False),  # binary_view
                            *(f.with_type(_VIEWS_PLAIN.get(f.type, f.type))  # and string_view
                              for f in schema if f.name != KEY_COLUMN)],  # stored plain, as
                           metadata=schema.metadata)  # in a table
    mod = type(samples).__module__
    if isinstance(samples, Mapping) and samples and all(
            isinstance(v, Mapping) for v in samples.values()):
        samples = samples.items()  # {key: sample}: the pairs
    if mod == "dload_arrow.repository.dataset":  # a copy: its batches in its types (as
        ds = samples  # samples uint8 became int64: QA lineage64), its lists' field names too
        samples = pa.RecordBatchReader.from_batches(  # (Parquet's `element`: QA review64g)
            ds.schema, (b.cast(ds.schema) for b in ds.batches()))
    refuse_shapes(samples, mod)
    if mod.startswith("polars"):
        if not hasattr(samples, "to_arrow") and hasattr(samples, "collect"):
            samples = samples.collect()  # a LazyFrame: run the query first
        samples = _polars_arrow(samples)
    elif mod.startswith("pandas"):
        from dload_arrow.store.pandas_table import pandas_table

        if key is not None and key not in samples.columns and key in samples.index.names:
            raise SchemaError(f"key={key!r} names the DataFrame's index, which is not stored "
                              "as a column; pass df.reset_index() to make it one")
        _warn_dropped_index(samples)
        samples = pandas_table(samples, schema if append_to is None else None)  # (schema=)
    if isinstance(samples, pa.RecordBatch):
        samples = pa.Table.from_batches([samples])
    if isinstance(samples, pa.Table):
        _refuse_duplicate_keys(samples, key)
        samples = pa.RecordBatchReader.from_batches(samples.schema, samples.to_batches())
    if isinstance(samples, pa.RecordBatchReader):
        _refuse_duplicates(samples.schema)
        samples = restored_reader(samples)  # a shard read by hand: its tensors as lists
        if append_to is not None and schema is not None:
            from dload_arrow.store.conform import conform_to

            samples = conform_to(samples, schema, key, where="the appended table",
                                 dataset=append_to, files=False)
        k = _with_key(schema, key, samples.schema)
        return _table_batches(samples, k, schema, key_offset, codes=append_to is None)
    if isinstance(samples, (str, bytes)) or not isinstance(samples, Iterable):
        raise SchemaError(
            f"cannot commit a {type(samples).__name__}: pass sample dicts or (key, dict) "
            "pairs, a pyarrow Table/RecordBatchReader, or a polars/pandas DataFrame")
    from dload_arrow.store.conform import warn_valueless
    from dload_arrow.store.pairs import samples_to_batches  # (they import this module)

    batches = samples_to_batches(samples, schema, key, key_offset,
                                 stated=schema is not None and append_to is None)
    return batches if append_to is None else warn_valueless(batches, append_to)


def _refuse_duplicate_keys(table: pa.Table, key: str | None) -> None:
    """A table in memory has its keys checked before any shard is written, rather than
    after every shard is uploaded (the publish checks them again, with the stored ones)."""
    name = key if key is not None else KEY_COLUMN
    if table.schema.names.count(name) != 1:
        return  # generated keys; a missing or doubled key column, refused with the batches
    try:
        keys = table.column(name).drop_null().cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return  # the batches refuse the column with their own message
    check_unique(keys.chunks, None, "")


def _refuse_duplicates(schema: pa.Schema) -> None:
    names = schema.names
    if len(set(names)) < len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SchemaError(
            f"the table has {names.count(dup)} columns named {dup!r}: a dataset's columns need "
            "distinct names; rename them (table.rename_columns([...])) or drop the copies"
        )


def _polars_arrow(df: Any) -> pa.Table:
    """``df.to_arrow()``; a column Arrow cannot hold (a 128-bit integer, objects) is named."""
    objects = [c for c, t in df.schema.items() if str(t) == "Object"]
    if objects:  # polars hands them to Arrow as 8-byte object addresses
        raise SchemaError(
            f"column {objects[0]!r} of the polars DataFrame holds Python objects (pl.Object), "
            "which have no Arrow type (polars would give their memory addresses); convert it "
            f"to a type, e.g. a struct or a JSON string: df.with_columns(pl.col("
            f"{objects[0]!r}).map_elements(json.dumps, return_dtype=pl.String))")
    try:
        table: pa.Table = df.to_arrow()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        odd = [c for c, t in df.schema.items() if str(t) in ("Int128", "UInt128")]
        which = f"column {odd[0]!r} is a polars {df.schema[odd[0]]}" if odd else \
            "a column has a type Arrow cannot hold"
        raise SchemaError(
            f"the polars DataFrame does not convert to Arrow: {which} ({e}); cast it to a "
            f"type Arrow has, e.g. df.with_columns(pl.col({(odd or ['x'])[0]!r})"
            ".cast(pl.Int64)) (or pl.String for values beyond 64 bits)"
        ) from e
    return table


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
