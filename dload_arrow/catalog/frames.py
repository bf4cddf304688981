"""DataFrame exports that keep tensor shapes: pandas cells and polars Array types.

A tensor column is stored as a fixed-size list with its shape in the field metadata
(:func:`~dload_arrow.store.rows.field_shape`). Arrow's own conversions know nothing of that
metadata and give flat cells (a ``(6,)`` array for a ``(2, 3)`` tensor); here pandas gets one
numpy array of the real shape per cell (None for a null row), as ``samples()`` gives, and
polars gets ``pl.Array(dtype, shape=(2, 3))``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.read.samples import column_values
from dload_arrow.store.rows import field_shape

__all__ = ["pandas_frame", "polars_shapes", "tensor_fields"]


def tensor_fields(schema: pa.Schema) -> list[tuple[int, pa.Field, tuple[int, ...]]]:
    """The tensor columns of ``schema``: (position, field, shape)."""
    out = []
    for i, field in enumerate(schema):
        shape = field_shape(field)
        if shape is not None and pa.types.is_fixed_size_list(field.type):
            out.append((i, field, shape))
    return out


def pandas_frame(table: pa.Table) -> Any:
    """``table.to_pandas()``, with each tensor cell a numpy array of its shape (or None), and
    integer and bool columns that hold nulls as pandas' nullable dtypes (``Int64``,
    ``UInt64``, ``boolean``...): numpy has no integer null, and Arrow's default turns such a
    column into float64, which changes every value above 2**53."""
    tensors = tensor_fields(table.schema)
    if not tensors:
        frame = table.to_pandas()
    else:
        frame = table.drop_columns([f.name for _, f, _ in tensors]).to_pandas()
        for i, field, _ in tensors:  # ascending positions: each lands where it was
            cells = np.empty(table.num_rows, dtype=object)
            # one by one: a slice assignment would broadcast the equal-shaped arrays into 3-D
            for row, value in enumerate(column_values(field, table.column(i))):
                cells[row] = value
            frame.insert(i, field.name, cells)
    for i, column in enumerate(table.columns):
        if column.null_count and (pa.types.is_integer(column.type)
                                  or pa.types.is_boolean(column.type)):
            frame.isetitem(i, column.to_pandas(types_mapper=_nullable_dtype))
    return frame


def _nullable_dtype(t: pa.DataType) -> Any:
    """pandas' nullable dtype for an Arrow integer or bool type (None: Arrow's default)."""
    import pandas as pd

    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    if pa.types.is_integer(t):
        return pd.api.types.pandas_dtype(str(t).replace("int", "Int").replace("uInt", "UInt"))
    return None


def polars_shapes(frame: Any, schema: pa.Schema, pl: Any) -> Any:
    """A polars (Lazy)Frame with its flat tensor columns (``Array(f32, 6)``) given their
    field's shape (``Array(f32, (2, 3))``); null rows stay null.

    Shapes of one dimension are already right; shapes with a zero are left flat (polars
    cannot infer the row count from zero-sized cells).
    """
    exprs: Sequence[Any] = [
        pl.when(pl.col(field.name).is_not_null())
        .then(pl.col(field.name).reshape((-1, *shape)))
        .alias(field.name)
        for _, field, shape in tensor_fields(schema)
        if len(shape) > 1 and 0 not in shape
    ]
    return frame.with_columns(exprs) if exprs else frame
