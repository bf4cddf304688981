"""Fit new rows to a stored dataset's columns before an append.

New files rarely carry every column the dataset has (photos arriving without their ``.json``
sidecars): a column the new rows lack is null in them, as it would be within one commit. A
column the dataset lacks is refused, naming it and the way out, and a column whose type
differs is cast to the stored type or refused naming both types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import SchemaError, form_hint, shown, user_warner
from dload_arrow.store import tensor_layout
from dload_arrow.store.append_hints import extra_hint, in_torch
from dload_arrow.store.cast_check import changed_row, failing_row
from dload_arrow.store.list_types import cast_views, holds_view
from dload_arrow.store.lossless import finer_hint, leaf_type, overflow_row, zone_refusal
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.nested_values import FieldValues
from dload_arrow.store.rows import SHAPE_META, field_shape
from dload_arrow.store.table_columns import flat_tensor, nested_tensor
from dload_arrow.store.time_numbers import time_cast_refusal
from dload_arrow.type_walk import holds_type, missing_fields

__all__ = ["ColumnMismatch", "conform_to", "fit_batch"]


def _textual(t: pa.DataType) -> bool:
    """Whether ``t`` holds text or bytes (a dictionary of them too)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t))


def conform_to(reader: pa.RecordBatchReader, stored: pa.Schema, key: str | None, *,
               where: str, dataset: str, files: bool) -> pa.RecordBatchReader:
    """``reader`` with the columns of ``stored`` (a dataset's schema), in its order.

    Args:
        reader: the new rows, with their key column (``key``, else ``__key__``) if any.
        stored: the schema of the version appended to (``__key__`` first).
        key: the key column of ``reader``, or None for ``__key__`` / generated keys.
        where: the input, named in errors.
        dataset: the dataset's name, named in errors.
        files: whether the input is files grouped into samples (hints speak of --exclude).
    """
    keycol = key or (KEY_COLUMN if KEY_COLUMN in reader.schema.names else None)
    new = reader.schema
    if keycol is not None and keycol not in new.names:
        raise SchemaError(f"key column {keycol!r} not found in {where}; its columns: "
                          f"{new.names}")
    columns = [f for f in stored if f.name != KEY_COLUMN]
    names = {f.name for f in columns}
    if keycol is not None and keycol in names:
        raise SchemaError(
            f"key column {keycol!r} of {where} is a data column of {dataset!r} (its keys are "
            f"stored apart, in {KEY_COLUMN}): an append cannot take its keys from it. Give the "
            f"rows a {KEY_COLUMN} column, or append without a key column (keys are then "
            "numbered after the stored rows)"
        )
    extra = [n for n in new.names if n != keycol and n not in names]
    missing = sorted(names - set(new.names))
    warn = user_warner()  # (here: the batches are read in the commit's thread)
    if extra:  # the stored columns the new files may hold in another format (png for jpg)
        like = [m for m in missing if stored.field(m).type == new.field(extra[0]).type]
        raise SchemaError(
            f"{where} has column(s) {extra} that {dataset!r} does not have (its columns: "
            f"{sorted(names)}{form_hint(extra[0], names)}); append adds rows, not columns: "
            f"{extra_hint(extra, files, keycol is not None, names, like)}, "
            "or commit a new version with every column"
        )
    for f in columns:
        i = new.get_field_index(f.name)
        if i < 0:
            continue
        got = new.field(i)
        shape = (got.metadata or {}).get(SHAPE_META)
        stored_shape = (f.metadata or {}).get(SHAPE_META)
        if shape is not None and stored_shape is not None and shape != stored_shape:
            raise SchemaError(
                f"{where}: column {f.name!r} holds tensors of shape {shape.decode()}, but "
                f"{dataset!r} stores shape {stored_shape.decode()}; every row of a column "
                "needs the same shape"
            )
    missing = [f.name for f in columns if f.name not in new.names]
    missing += [p for f in columns if f.name in new.names  # a struct's fields (segments[].image)
                for p in missing_fields(f.type, new.field(f.name).type, f.name)]
    fields = [new.field(keycol)] if keycol else []
    fields += [f.with_nullable(True) if f.name in missing else f for f in columns]
    schema = pa.schema(fields)

    def batches() -> Iterator[pa.RecordBatch]:
        base = 0  # (rows named from the input's first: QA dtypes66)
        for batch in reader:
            try:
                yield fit_batch(batch, schema, no_text_from=True, base=base)
                base += batch.num_rows
            except ColumnMismatch as e:
                why = finer_hint(e.name, e.got, e.want, e.reason, dataset) or (
                    f"{e.reason}. Cast the column to {e.want} in the input, or commit a new "
                    "version with the new type")
                if extra := missing_fields(e.got, e.want, e.name):  # (QA chat65: the types,
                    why = (f"its field {extra[0]} is not in the stored type: an append adds "
                           "rows, not fields; drop the field from the input, or commit a new "
                           "version with the field (a folder of both days' files unifies "
                           "them)")  # cut short, did not show it)
                if holds_type(e.want, pa.types.is_null):  # no value when it was committed
                    why = (f"a {e.want} column holds no value (it had none when committed: "
                           "empty lists or nulls only): commit a new version with the column "
                           f"typed (e.g. commit(..., schema=...) with {e.name!r} as {e.got}; "
                           "from the CLI, commit the files with values first), then append")
                raise SchemaError(f"{where}: column {e.name!r} is {e.got}, and {dataset!r} "
                                  f"stores {e.want}; {why}") from e
        if missing:  # once every row was read (QA vision62: not before a refusal)
            what = "column(s)" if set(missing) <= names else "column(s) or field(s)"
            warn(f"{where} lacks {what} {missing} of {dataset!r}: the appended rows store "
                 f"null there{in_torch(stored, missing)}; add the column(s) to the input to "
                 "store values")

    return pa.RecordBatchReader.from_batches(schema, batches())



def _int_to_decimal(col: pa.Array, want: pa.DataType) -> pa.Array | None:
    """Integers as ``want``, a decimal, checked by value: Arrow's own cast asks for room for
    any int64 (precision >= 19 + scale) whatever the values, so 7 would not go into
    decimal128(5, 1). Cast through a decimal wide enough, then down, which checks each value
    fits (lists of integers into lists of decimals too). None for other columns."""
    leaf = leaf_type(want)
    if not (pa.types.is_integer(leaf_type(col.type)) and pa.types.is_decimal(leaf)
            and leaf.scale >= 0):
        return None
    digits = 20 + leaf.scale  # uint64's 20 digits before the point
    wide = pa.decimal128(digits, leaf.scale) if digits <= 38 else pa.decimal256(
        min(digits, 76), leaf.scale)
    return col.cast(_with_leaf(want, wide)).cast(want)


def _with_leaf(t: pa.DataType, leaf: pa.DataType) -> pa.DataType:
    """List type ``t`` with ``leaf`` as its innermost value type."""
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_with_leaf(t.value_type, leaf)), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        make = pa.large_list if pa.types.is_large_list(t) else pa.list_
        return make(t.value_field.with_type(_with_leaf(t.value_type, leaf)))
    return leaf


class ColumnMismatch(Exception):
    """A column of a batch that does not cast to the type it must have; its cause says why
    (the cast's error, or a SchemaError from the check that refused the values)."""

    def __init__(self, name: str, got: pa.DataType, want: pa.DataType) -> None:
        super().__init__(f"column {name!r}: {got} does not convert to {want}")
        self.name, self.got, self.want = name, got, want

    @property
    def reason(self) -> str:
        return str(self.__cause__)


def fit_batch(batch: pa.RecordBatch, schema: pa.Schema, no_text_from: bool = False,
              times_from: bool = False, base: int = 0) -> pa.RecordBatch:
    """``batch`` with ``schema``'s columns in its order: a missing column null, the others
    cast to their type (ColumnMismatch if one cannot, or would change its values: text parsed
    into numbers, a float beyond the type's range turned into inf; ``no_text_from``: numbers
    and booleans made text, which an append refuses as its pairs are; ``base``: the input's
    row number of the batch's first row)."""
    arrays = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        col = pa.nulls(batch.num_rows, f.type) if i < 0 else batch.column(i)
        shape = field_shape(f)
        got = None if i < 0 else field_shape(batch.schema.field(i))
        if shape is not None and got is not None and got != shape:  # a frame's own tensors
            raise SchemaError(f"column {f.name!r}: its tensors have shape {got}, but the "
                              f"schema says {shape}; reshape them, or change the schema")
        if col.type != f.type and shape is not None:
            col = flat_tensor(col, shape) or col  # a polars Array of that shape
        elif col.type != f.type and pa.types.is_fixed_size_list(f.type):
            col = nested_tensor(col, f.type) or col  # a tensor into a nested list column
        if (no_text_from and col.type != f.type and _textual(f.type)
                and not _textual(col.type) and col.null_count < len(col)):
            raise ColumnMismatch(f.name, col.type, f.type) from SchemaError(
                "an append does not store numbers, booleans or other typed values as text (7 "
                "would become '7', "
                "True 'true'), as it refuses such values given as samples")
        if col.type != f.type:
            col = _cast(f.name, col, f.type, times_from, base)
        arrays.append(col)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _raw_tensor_bytes(name: str, col: pa.Array, want: pa.DataType) -> str:
    """Why bytes are refused as the tensors ``want`` when each value is exactly one tensor's
    bytes: a shard read by polars or DuckDB without dload_arrow shows its tensors so."""
    t = col.type
    if not ((pa.types.is_binary(t) or pa.types.is_large_binary(t)
             or pa.types.is_fixed_size_binary(t))
            and tensor_layout.packable_type(want)):
        return ""
    width = tensor_layout.tensor_width(want)
    if pc.all(pc.equal(pc.binary_length(col), width)).as_py() is not True:
        return ""
    item = _POLARS_NAMES.get(str(want.value_type), str(want.value_type).capitalize())
    return (f"each of its values is {width} bytes, the raw bytes a shard stores for these "
            "tensors (polars or DuckDB reading a shard file directly see them so); read the "
            "data through dload_arrow instead (ds.to_polars(), ds.to_arrow(), samples() in "
            f"repo.sql), or reinterpret them (polars: pl.col({name!r}).bin.reinterpret("
            f"dtype=pl.Array(pl.{item}, {want.list_size})))")


_POLARS_NAMES = {"halffloat": "Float16", "float": "Float32", "double": "Float64",
                 **{f"{s}int{b}": f"{s.upper()}Int{b}" for s in ("", "u")
                    for b in (8, 16, 32, 64)}}


def _cast(name: str, col: pa.Array, want: pa.DataType, times_from: bool = False,
          base: int = 0) -> pa.Array:
    """``col`` cast to ``want`` (ColumnMismatch if not exactly); ``base``: the row number of
    its first row in the input, for the rows a refusal names."""
    if len(col) and col.null_count == len(col):  # no value to lose (a file's empty column)
        return pa.nulls(len(col), want)
    raw = _raw_tensor_bytes(name, col, want)
    if raw:
        raise ColumnMismatch(name, col.type, want) from SchemaError(raw)
    if _textual(col.type) and not _textual(want):
        raise ColumnMismatch(name, col.type, want) from SchemaError(
            f"text is not parsed into {want} (a value such as '02134' would silently become "
            "2134, 'false' False)")
    got, leaf = leaf_type(col.type), leaf_type(want)
    why = time_cast_refusal(got, leaf, numbers=not times_from)  # (times_from: schema= says)
    if why is not None and col.null_count < len(col):
        raise ColumnMismatch(name, col.type, want) from SchemaError("its values " + why)
    if (pa.types.is_timestamp(got) and pa.types.is_timestamp(leaf)
            and (got.tz is None) != (leaf.tz is None) and col.null_count < len(col)):
        raise ColumnMismatch(name, col.type, want) from SchemaError(
            "its values have" + zone_refusal(leaf, got.tz is not None))
    try:
        if holds_view(col.type) and col.type != want:  # pyarrow's cast of views loses
            out = cast_views(col, want)  # rows or casts none (QA review65b-g, review66)
        else:
            out = _int_to_decimal(col, want) or col.cast(want)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        row = failing_row(col, want) if isinstance(e, pa.ArrowInvalid) else None
        raise ColumnMismatch(name, col.type, want) from (e if row is None else SchemaError(
            f"the value at row {base + row}, {shown(col[row].as_py())}, does not fit: {e}"))
    row = overflow_row(col, out)
    if row is not None:
        raise ColumnMismatch(name, col.type, want) from SchemaError(
            f"the value at row {base + row}, {col[row].as_py()!r}, is beyond the range of {want} "
            "and would be stored as inf or 0")
    row = changed_row(col, out)
    if row is not None:
        raise ColumnMismatch(name, col.type, want) from SchemaError(
            f"the value at row {base + row}, {shown(col[row].as_py())}, would be stored as "
            f"{shown(out[row].as_py())}")
    return out


def warn_valueless(batches: Iterator[pa.RecordBatch], dataset: str
                   ) -> Iterator[pa.RecordBatch]:
    """``batches`` (appended samples), warning at their end of a column that held no value in
    any of them (absent from every sample, or None): as for a table lacking it (conform_to),
    torch then turns that column into lists in a batch holding these rows (QA review56)."""
    return _valueless(batches, dataset, user_warner())  # (the caller's line, now)


def _valueless(batches: Iterator[pa.RecordBatch], dataset: str,
               warn: Callable[[str], None]) -> Iterator[pa.RecordBatch]:
    rows, nulls, fields = 0, dict[str, int](), FieldValues()
    for b in batches:
        rows += b.num_rows
        for i, f in enumerate(b.schema):
            nulls[f.name] = nulls.get(f.name, 0) + b.column(i).null_count
        fields.add(b)  # (a struct's fields: segments[].image, QA review64b)
        yield b
    empty = [n for n, c in nulls.items() if n != KEY_COLUMN and rows and c == rows
             and not pa.types.is_null(b.schema.field(n).type)]  # (null: the commit warned)
    empty += fields.empty()
    if empty:
        warn(f"the appended samples have no value in column(s) {empty} of {dataset!r}: they "
             f"store null there{in_torch(b.schema, empty)}; give the samples those columns "
             "to store values")
