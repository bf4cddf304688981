"""A committed table's columns in the types dload stores and every read path handles.

- String and binary *views* become plain strings and binary: Parquet stores them so anyway,
  and compute kernels such as ``take`` and ``filter`` refuse views.
- Dictionary columns of non-string values are decoded: Arrow cannot read them back from
  Parquet (``Unsupported cast from int64 to dictionary``); string dictionaries (pandas and
  polars categoricals) stay, Parquet keeps them as dictionaries.
- Nested fixed-size lists of numbers (a polars ``Array`` of shape (2, 3), what
  ``to_polars()`` gives for a tensor column) become tensor columns: one fixed-size list with
  the shape in the field metadata, as numpy arrays are stored.
- A pandas column of numpy arrays (what ``to_pandas()`` gives for a tensor column) becomes a
  tensor column too (:func:`pandas_tensors`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.store.rows import SHAPE_META

__all__ = ["pandas_tensors", "storable"]

_VIEWS = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _nulls(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), bool)


def _as_tensor(field: pa.Field, col: pa.Array) -> tuple[pa.Field, pa.Array] | None:
    """A nested fixed-size list column of numbers as one tensor column (None: not one)."""
    shape: list[int] = []
    t = field.type
    while pa.types.is_fixed_size_list(t):
        shape.append(t.list_size)
        t = t.value_type
    if len(shape) < 2 or not _numeric(t):
        return None
    values: pa.Array = col
    valid = np.ones(len(col), bool) if not col.null_count else ~_nulls(col)
    for _ in shape:
        size = values.type.list_size
        values = values.values.slice(values.offset * size, len(values) * size)
        valid = np.repeat(valid, size)
        if values.null_count and bool((_nulls(values) & valid).any()):
            return None  # a missing inner list or value in a present row: no tensor form
    size = math.prod(shape)
    mask = col.is_null() if col.null_count else None
    flat = pa.FixedSizeListArray.from_arrays(values, size, mask=mask)
    meta = dict(field.metadata or {})
    meta[SHAPE_META] = json.dumps(shape).encode()
    return pa.field(field.name, flat.type, metadata=meta), flat


def storable(field: pa.Field, col: pa.Array) -> tuple[pa.Field, pa.Array]:
    """``field`` and ``col`` in the type dload stores (module doc)."""
    plain = _VIEWS.get(col.type)
    if plain is not None:
        return field.with_type(plain), col.cast(plain)
    t = col.type
    if pa.types.is_dictionary(t) and not (
            pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
        return field.with_type(t.value_type), col.cast(t.value_type)
    tensor = _as_tensor(field, col)
    return tensor if tensor is not None else (field, col)


def pandas_tensors(df: Any) -> tuple[Any, dict[str, tuple[pa.Field, pa.Array]]]:
    """``df`` without its columns of numpy arrays, and those columns as tensor columns."""
    from dload_arrow.store.pairs import tensor_column  # it imports rows, which imports this

    out: dict[str, tuple[pa.Field, pa.Array]] = {}
    for name in df.columns:
        col = df[name]
        if col.dtype != object:
            continue
        present = col[col.notna()]
        if len(present) and isinstance(present.iloc[0], np.ndarray):
            out[str(name)] = tensor_column(str(name), list(col))
    return (df.drop(columns=list(out)) if out else df), out
