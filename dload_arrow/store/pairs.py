"""Samples given as Python objects, turned into record batches of ``__key__`` + columns.

Two shapes are accepted, one per stream:

- ``(key, {column: value})`` pairs (a ``{key: {column: value}}`` dict gives its items);
- sample dicts, as ``ds.samples()`` yields them: the key in ``__key__`` (or in the column
  ``key=`` names), or, when no sample has one, generated keys: zero-padded row numbers in
  commit order, as for a table without keys (continuing after an append's stored rows).

Column types are inferred from the first chunk unless ``schema=`` gives them; numpy arrays
become tensor columns (fixed-size lists with their shape in the field metadata). A struct
value (a dict) with a field its column's type lacks is refused, as a column the schema lacks
is (Arrow would drop it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import typed_array
from dload_arrow.errors import SchemaError, form_hint, shown
from dload_arrow.store.frames import CHUNK_BYTES, frames_array, frames_misfit, held_bytes
from dload_arrow.store.lossless import check_whole_numbers, leaf_type
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.nested_kinds import shape_clash
from dload_arrow.store.null_types import null_type_error
from dload_arrow.store.pair_checks import (
    empty_tensor_error,
    encodes,
    half_ready,
    int_overflow_error,
    key_of,
    missing_as_nulls,
    not_unicode,
    refuse_extra_fields,
    refuse_flattening,
    refuse_nonfinite_decimals,
    refuse_sets,
    shape_refusal,
    torch_advice,
    without_missing,
)
from dload_arrow.store.rows import SHAPE_META, KeyOffset, field_shape
from dload_arrow.store.time_units import inferred_ns, refuse_truncation
from dload_arrow.type_walk import holds_type

__all__ = ["samples_to_batches", "tensor_column"]

_CHUNK = 1024  # samples per batch


def _tensor_field(key: str, name: str, arr: np.ndarray) -> pa.Field:
    size = int(np.prod(arr.shape)) if arr.ndim else 1
    if arr.dtype.kind not in "biuf":
        raise SchemaError(
            f"sample {key!r}, column {name!r}: a numpy array of dtype {arr.dtype} is not a "
            "tensor dload can store (numbers and booleans only); pass strings or bytes as a "
            "list, or one value per sample"
        )
    if size == 0:
        raise empty_tensor_error(key, name, arr)
    typ = pa.list_(pa.from_numpy_dtype(arr.dtype), size)
    return pa.field(name, typ, metadata={SHAPE_META: json.dumps(list(arr.shape)).encode()})


def _infer_schema(rows: list[tuple[str, Mapping[str, Any]]]) -> pa.Schema:
    first_key, first = rows[0]
    fields = [pa.field(KEY_COLUMN, pa.string(), nullable=False)]
    for col in first:  # the first sample's columns: a later one's new column is refused
        if col == KEY_COLUMN:
            raise SchemaError(f"sample {first_key!r}: column name {KEY_COLUMN!r} is reserved")
        if isinstance(col, str) and not encodes(col):
            raise not_unicode(f"sample {first_key!r}: column name", col)
        found = next(((k, r[col]) for k, r in rows if r.get(col) is not None), None)
        value = None if found is None else found[1]
        if isinstance(value, np.ndarray):
            assert found is not None
            fields.append(_tensor_field(found[0], col, _native(_unmasked(found[0], col, value))))
        elif value is None:
            fields.append(pa.field(col, pa.null()))
        else:
            refuse_nonfinite_decimals(rows, col)
            try:
                typ = inferred_ns(without_missing([r.get(col) for _, r in rows]))
            except OverflowError as e:
                raise int_overflow_error(rows, col) from e
            except (*_MISFITS[:3], TypeError, ValueError) as e:  # (NaN among Timestamps)
                bad = _first_misfit(rows, col, value)
                at = shape_clash(value, dict(rows)[bad].get(col), col) or str(e)[:300]
                raise SchemaError(
                    f"sample {bad!r}, column {col!r}: its value does not fit the type of "
                    f"earlier samples ({at}); fix it or pass schema= to say which type you want"
                ) from e
            fields.append(pa.field(col, typ))
    return pa.schema(fields)


# What pyarrow raises for a value that misfits a type (NotImplemented: datetime64 of other units)
_MISFITS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError,
            TypeError, OverflowError)


def _first_misfit(rows: list[tuple[str, Mapping[str, Any]]], col: str, first: Any) -> str:
    try:
        typ = pa.array([first]).type
    except (*_MISFITS, ValueError):  # (the first itself: a list holding NaN among times)
        return rows[0][0]
    for key, r in rows:
        try:
            pa.array([r.get(col)], type=typ)
        except (*_MISFITS, ValueError):  # (NaN among Timestamps: QA review64g)
            return key
    return rows[-1][0]


def _unmasked(key: str, name: str, value: Any) -> np.ndarray:
    """``value`` as an array; a numpy masked array with masked values is refused (its mask
    would be lost: the hidden values stored as data)."""
    if isinstance(value, np.ma.MaskedArray):
        if np.ma.getmaskarray(value).any():
            raise SchemaError(
                f"sample {key!r}, column {name!r}: a masked array with masked values, whose "
                "mask would be lost (the hidden values stored as data); fill them "
                "(arr.filled(np.nan)), or store None for a missing tensor")
        return np.asarray(value.data)
    return np.asarray(value)


def _native(arr: np.ndarray) -> np.ndarray:
    """``arr`` in this machine's byte order (Arrow refuses byte-swapped data)."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def _tensor(key: str, field: pa.Field, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` flattened for a tensor column of ``shape``; another shape is refused (never
    reshaped: a (3, 2) array read back as (2, 3) would be silently wrong)."""
    arr = _native(_unmasked(key, field.name, value))
    if tuple(arr.shape) != tuple(shape):
        raise shape_refusal(key, field, arr, shape)
    return arr.reshape(-1)


def tensor_column(name: str, values: list[Any]) -> tuple[pa.Field, pa.Array]:
    """A tensor column of numpy ``values`` (None: null), all of the first one's shape."""
    first = next(v for v in values if v is not None)
    field = _tensor_field("row 0", name, _native(np.asarray(first)))
    shape = field_shape(field)
    assert shape is not None
    flat = [None if v is None else _tensor(f"row {i}", field, v, shape)
            for i, v in enumerate(values)]
    return field, typed_array(flat, field.type)


def _listed(v: np.ndarray) -> list[Any]:
    """An array in a list column as Python values; ns times as whole microseconds' datetimes
    where they are, else numpy's scalars (``tolist`` gives ints: counts of ns stored as us)."""
    if v.dtype.kind in "Mm" and np.datetime_data(v.dtype)[0] == "ns":
        ints = v.view(np.int64)[~np.isnat(v)]
        return v.astype(f"{v.dtype.str[1]}8[us]").tolist() if not (ints % 1000).any() else list(v)
    return _native(v).tolist()


def _column(rows: list[tuple[str, Mapping[str, Any]]], field: pa.Field, stated: bool = False
            ) -> pa.Array:
    values = without_missing([r.get(field.name) for _, r in rows])
    shape = field_shape(field)
    if shape is not None:
        values = [None if v is None else _tensor(k, field, v, shape)
                  for (k, _), v in zip(rows, values, strict=True)]
    elif pa.types.is_fixed_size_list(field.type):
        refuse_flattening(rows, field, values)
    elif pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        if (frames := frames_array(values, field.type)) is not None:
            return frames  # (an episode's frames: from their buffers, QA rl66)
        # arrays into a list column (shapes may vary): nested lists, as .tolist() gives
        values = [_listed(v) if isinstance(v, np.ndarray) else v for v in values]
        refuse_sets(rows, field, values)
    elif pa.types.is_struct(field.type):  # a set in a dict too (QA notebook61)
        refuse_sets(rows, field, values)
    check_whole_numbers(rows, field, values, stated)
    refuse_extra_fields(rows, field, values)
    if pa.types.is_float16(leaf_type(field.type)):  # pyarrow takes floats and np.float16
        values = [half_ready(v) for v in values]  # only: float32 (an encoder's) exact as float64
    try:
        out = typed_array(values, field.type)
    except _MISFITS as e:
        out = missing_as_nulls(values, field.type)  # (pd.NA, NaT in lists, dicts: 66b)
        for (key, _), v in zip(rows, values, strict=False) if out is None else ():
            try:
                pa.array([v], type=field.type)
            except Exception:
                if isinstance(v, str) and not encodes(v):  # not a type that is too narrow
                    raise not_unicode(f"sample {key!r}, column {field.name!r}: value",
                                      v) from e
                if holds_type(field.type, pa.types.is_null):  # null, list<null> (QA migrate59)
                    raise null_type_error(key, field, v, stated, _CHUNK) from e
                if (advice := torch_advice(v) or frames_misfit(v, field.type)) is not None:
                    raise SchemaError(f"sample {key!r}, column {field.name!r}: the value "
                                      f"{advice}") from e
                raise SchemaError(
                    f"sample {key!r}, column {field.name!r}: value {shown(v)} does not fit "
                    f"type {field.type}; fix the sample, or store a wider type: pass schema= "
                    "to a commit (an append keeps the stored type: commit a new version with "
                    "the wider one)"
                ) from e
        if out is None:
            raise SchemaError(f"column {field.name!r} does not fit type {field.type}: {e}") from e
    refuse_truncation(rows, field, values)  # (a time finer than its unit: QA dtypes66)
    return out


def samples_to_batches(
    items: Iterable[Any], schema: pa.Schema | None, key: str | None = None,
    offset: KeyOffset = 0, stated: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Batches of ``items``: ``(key, dict)`` pairs or sample dicts (module doc); ``offset``
    is the first generated row number; ``stated``: ``schema`` is a commit's schema= (its
    time units are the user's: numbers go into time columns as counts of them)."""
    key_col = key or KEY_COLUMN
    keyed: bool | None = None  # dict stream: keys given (True) or generated (False)
    pairs = False  # a stream of pairs
    chunk: list[tuple[str, Mapping[str, Any]]] = []
    held = 0  # the chunk's bytes, about (bytes, text, arrays)
    inferred = schema is None
    for n, item in enumerate(items):
        if isinstance(item, Mapping) != (keyed is not None) and (pairs or keyed is not None):
            raise SchemaError(f"sample #{n} is {shown(item)} among "
                              f"{'pairs' if pairs else 'sample dicts'}: pass dicts or "
                              "(key, dict) pairs, not both")
        if isinstance(item, Mapping):
            has = key_col in item
            if keyed is None:
                if key is not None and not has:
                    raise SchemaError(f"sample #{n} has no key column {key!r} (key=); its "
                                      f"columns are {sorted(item)}")
                keyed = has
            elif has != keyed:
                raise SchemaError(
                    f"sample #{n} {'has' if has else 'lacks'} a {key_col!r} column and the "
                    f"first sample {'lacks' if has else 'has'} one: give every sample its key, "
                    "or none (keys are then row numbers)"
                )
            if has:
                k = key_of(item[key_col], n, repr(key_col))
                sample: Any = {c: v for c, v in item.items() if c != key_col}
            else:
                if callable(offset):
                    offset = offset()  # (the stored keys are searched once, if ever)
                k, sample = f"{offset + n:012d}", item
        else:
            pairs = True
            if key is not None:
                raise SchemaError(
                    f"key={key!r} names the key column of sample dicts or a table, and these "
                    "are (key, dict) pairs, which carry their own keys: drop key=, or pass "
                    f"dicts holding a {key!r} column")
            try:
                k, sample = item
            except (TypeError, ValueError) as e:
                raise SchemaError(
                    "expected (key, {column: value}) pairs or sample dicts with a "
                    f"{KEY_COLUMN!r}, got {shown(item)}"
                ) from e
            k = key_of(k, n, "the pair's first item")
            if not isinstance(sample, Mapping):
                raise SchemaError(f"sample {k!r}: expected a dict of columns, got {type(sample)}")
        chunk.append((k, sample))
        held += held_bytes(sample)  # (1 MB samples: 1 GB a chunk of 1024, QA lowmem66)
        if len(chunk) >= _CHUNK or held >= CHUNK_BYTES:
            schema = schema or _infer_schema(chunk)
            yield _pairs_batch(chunk, schema, inferred, stated)
            chunk, held = [], 0
    if chunk:
        schema = schema or _infer_schema(chunk)
        yield _pairs_batch(chunk, schema, inferred, stated)


def _pairs_batch(rows: list[tuple[str, Mapping[str, Any]]], schema: pa.Schema,
                 inferred: bool = False, stated: bool = False) -> pa.RecordBatch:
    names = set(schema.names)
    for key, sample in rows:
        extra = set(sample) - names
        if extra:
            how = (" (the columns come from the first sample, so that a misspelt column is "
                   "caught: pass schema= with every column, optional ones null where absent)"
                   if inferred else "")
            raise SchemaError(
                f"sample {key!r} has columns {sorted(extra)} that the schema lacks "
                f"(schema columns: {schema.names[1:]}"
                f"{form_hint(sorted(extra)[0], schema.names)}){how}")  # (NFD: QA text64)
    try:
        keys = typed_array([k for k, _ in rows], pa.string())
    except UnicodeEncodeError as e:  # a lone surrogate ('\udcff' from surrogateescape)
        raise not_unicode("sample key", next(k for k, _ in rows if not encodes(k))) from e
    arrays = [keys, *[_column(rows, f, stated) for f in schema][1:]]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
