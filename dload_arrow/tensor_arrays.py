"""Arrow's canonical ``arrow.fixed_shape_tensor`` extension columns as numpy blocks.

Such a column stores each tensor as a fixed-size list of its values in the physical order of
``shape``; ``permutation`` (when given) says how the logical dimensions map onto those. dload
reads it as it reads its own tensor columns: one numpy block ``(rows, *logical shape)`` of the
value type, a view of the Arrow buffer where the layout allows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import numpy_values

__all__ = ["fixed_shape_block", "fixed_shape_rows", "is_fixed_shape_tensor"]


def is_fixed_shape_tensor(typ: pa.DataType) -> bool:
    """Whether ``typ`` is ``arrow.fixed_shape_tensor`` of numbers or booleans."""
    if not isinstance(typ, pa.FixedShapeTensorType):
        return False
    v = typ.value_type
    return pa.types.is_integer(v) or pa.types.is_floating(v) or pa.types.is_boolean(v)


def _logical(block: np.ndarray, typ: pa.FixedShapeTensorType) -> np.ndarray:
    perm = typ.permutation
    if perm is None or list(perm) == list(range(len(perm))):
        return block
    return block.transpose(0, *(p + 1 for p in perm))  # as pyarrow's to_numpy_ndarray


def fixed_shape_block(arr: pa.Array) -> np.ndarray | None:
    """``arr`` (a numeric fixed_shape_tensor array) as one array ``(rows, *shape)``, or None
    when a tensor or a value is missing (a null is never made a number)."""
    storage = arr.storage  # a fixed-size list, sliced as arr is
    values = storage.flatten()  # honours the offset, no copy
    if storage.null_count or values.null_count:
        return None
    typ = arr.type
    return _logical(numpy_values(values).reshape((len(arr), *typ.shape)), typ)


def fixed_shape_rows(arr: pa.Array) -> list[Any]:
    """One numpy array per row (None for a missing tensor); each row's own copy, writeable."""
    typ = arr.type
    block = fixed_shape_block(arr)
    if block is not None:
        return list(np.array(block))  # one fresh array per batch, as tensor columns
    dtype = np.dtype(typ.value_type.to_pandas_dtype())
    return [None if v is None else _logical(
        np.asarray([v], dtype=object if None in v else dtype).reshape((1, *typ.shape)), typ)[0]
        for v in arr.storage.to_pylist()]
