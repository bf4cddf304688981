"""Arrow data and samples to torch tensors, without copies where Arrow's layout allows.

- A numeric column without nulls becomes a tensor over the column's own buffer
  (``torch.from_numpy`` of a zero-copy numpy view).
- A fixed-size list of numbers (how dload stores numpy arrays) becomes one tensor of shape
  ``(rows, *shape)``, the shape read from the field metadata ``dload.shape``, again over the
  values buffer. Arrow's ``fixed_shape_tensor`` extension columns do the same with their own
  shape (and permutation), keeping the value type.
- Booleans (bit-packed in Arrow) and columns with nulls need a copy; numeric columns with nulls
  stay Python lists (``None`` kept) so a missing value is never silently a number.
- Strings and binary blobs (JPEG, FLAC bytes, keys) stay Python ``str`` / ``bytes`` lists.

Zero-copy tensors share memory with Arrow buffers: treat them as read-only (``.clone()`` before
writing in place).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from dload_arrow.args import kind
from dload_arrow.arrays import numpy_values, pylist
from dload_arrow.errors import shown
from dload_arrow.pipeline.collate_checks import check_one_kind, check_same_columns
from dload_arrow.store.rows import field_shape
from dload_arrow.tensor_arrays import fixed_shape_block, is_fixed_shape_tensor
from dload_arrow.torch.values import (
    check_exact_doubles,
    frames_type,
    from_numpy,
    torch_dtype,
    value_to_torch,
)

__all__ = ["collate", "column_to_tensor", "sample_to_torch", "to_torch"]


def _numeric(typ: pa.DataType) -> bool:
    return pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)


def _flat_numpy(arr: pa.Array) -> np.ndarray:
    return numpy_values(arr)  # zero-copy for numbers; booleans are bit-packed: one copy


def column_to_tensor(column: pa.Array | pa.ChunkedArray, field: pa.Field | None = None) -> Any:
    """One Arrow column as a tensor when it is numeric, else a Python list.

    Args:
        column: the column (a chunked array is combined first, which copies if it has
            several chunks).
        field: its field, for the ``dload.shape`` metadata of a tensor column (a fixed-size
            list of numbers): without it such a column is ``(rows, list_size)``. Other columns
            need no field and ignore it.

    Returns:
        A tensor of shape ``(rows,)`` or ``(rows, *shape)``, or a list of Python values.

    Raises:
        TypeError: ``column`` is not a pyarrow Array or ChunkedArray, or ``field`` is neither
            a pyarrow Field nor None.
    """
    if not isinstance(column, pa.Array | pa.ChunkedArray):
        raise TypeError(f"column_to_tensor(column={shown(column)}): column must be a pyarrow "
                        f"Array or ChunkedArray (e.g. batch.column('x')), got {kind(column)}")
    if field is not None and not isinstance(field, pa.Field):
        raise TypeError(f"column_to_tensor(field={shown(field)}): field must be a pyarrow "
                        f"Field (e.g. batch.schema.field('x')) or None, got {kind(field)}")
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    typ = column.type
    if column.null_count:
        return pylist(column)
    if _numeric(typ):
        return from_numpy(_flat_numpy(column))
    if is_fixed_shape_tensor(typ):  # Arrow's tensor extension: its shape and value type
        block = fixed_shape_block(column)
        return from_numpy(block) if block is not None else pylist(column)
    if pa.types.is_fixed_size_list(typ) and _numeric(typ.value_type):
        values = column.flatten()  # honours the array's offset, no copy
        if values.null_count:
            return pylist(column)
        shape = field_shape(field) if field is not None else None
        if shape is None:
            shape = (typ.list_size,)
        flat = _flat_numpy(values)
        return from_numpy(flat.reshape((len(column), *shape)))
    return pylist(column)


def to_torch(item: Any, schema: pa.Schema | None = None) -> Any:
    """Convert what a pipeline yields into torch-friendly values.

    Args:
        item: a ``pyarrow.RecordBatch`` / ``Table`` (a batch: dict of column -> tensor or
            list), a sample dict (see :func:`sample_to_torch`), or anything else (returned
            unchanged, so custom collates keep working).
        schema: the sample schema, to shape tensor columns of sample dicts.

    Returns:
        The converted item.
    """
    if schema is not None and not isinstance(schema, pa.Schema):
        raise TypeError(f"to_torch(schema={shown(schema)}): schema must be a pyarrow Schema "
                        f"(e.g. ds.schema) or None, got {kind(schema)}")
    if isinstance(item, (pa.RecordBatch, pa.Table)):
        return {f.name: column_to_tensor(item.column(i), f) for i, f in enumerate(item.schema)}
    if isinstance(item, Mapping):
        return sample_to_torch(item, schema)
    return item


def sample_to_torch(sample: Mapping[str, Any], schema: pa.Schema | None = None) -> dict[str, Any]:
    """One sample dict: numbers and numeric arrays/lists become tensors, the rest stays.

    With ``schema``, numbers and lists take their column's type (a ``float64`` column gives
    ``torch.float64``, a list of ``int32`` an ``int32`` tensor, empty or not) and tensor
    columns their recorded shape (``dload.shape``). ``str``, ``bytes``, ``None`` and nested
    lists are left as they are.
    """
    if not isinstance(sample, Mapping):
        raise TypeError(f"sample_to_torch(sample={shown(sample)}): sample must be a dict of "
                        f"column -> value, got {kind(sample)}")
    if schema is not None and not isinstance(schema, pa.Schema):
        raise TypeError(f"sample_to_torch(schema={shown(schema)}): schema must be a pyarrow "
                        f"Schema (e.g. ds.schema) or None, got {kind(schema)}")
    columns = _columns(schema) if schema is not None else {}
    return {name: value_to_torch(value, *columns.get(name, (None, None)), name=name)
            for name, value in sample.items()}


@functools.lru_cache(maxsize=16)
def _columns(schema: pa.Schema) -> dict[str, tuple[tuple[int, ...] | None, torch.dtype | None]]:
    """Each column's recorded shape and torch dtype (once per schema, not per sample)."""
    return {f.name: frames_type(f.type) or (field_shape(f), torch_dtype(f.type)) for f in schema}


def collate(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The default collate: a list of sample dicts -> dict of column -> batch.

    Tensors of equal shape (and numbers) are stacked into one tensor with a leading batch
    dimension; everything else (strings, bytes, ragged tensors, None) becomes a list.
    """
    if isinstance(samples, str | bytes | Mapping) or not isinstance(samples, Sequence):
        raise TypeError(f"collate(samples={shown(samples)}): samples must be a list of sample "
                        f"dicts, got {kind(samples)}")
    bad = next((s for s in samples if not isinstance(s, Mapping)), None)
    if bad is not None:
        raise TypeError(f"collate: samples must be dicts of column -> value, got {kind(bad)} "
                        f"{shown(bad)}")
    if not samples:
        return {}
    check_same_columns(samples)
    out: dict[str, Any] = {}
    for name in samples[0]:
        raw = [s[name] for s in samples]
        # Python ints among floats: float64, as for floats alone (default_collate's way)
        mixed = all(type(v) in (int, float) for v in raw) and float in map(type, raw)
        if mixed:
            check_exact_doubles(raw, name)
        values = [value_to_torch(v, None, torch.float64 if mixed else None, name=name)
                  for v in raw]
        if all(isinstance(v, torch.Tensor) for v in values) and all(
            v.shape == values[0].shape and v.dtype == values[0].dtype for v in values
        ):
            out[name] = torch.stack(values)
        else:  # a list: arrays as tensors, other values as they came
            check_one_kind(name, raw)
            out[name] = [v if isinstance(s[name], np.ndarray) else s[name]
                         for s, v in zip(samples, values, strict=True)]
    return out
