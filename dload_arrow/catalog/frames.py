"""DataFrame exports that keep tensor shapes: pandas cells and polars Array types.

A tensor column is stored as a fixed-size list with its shape in the field metadata
(:func:`~dload_arrow.store.rows.field_shape`). Arrow's own conversions know nothing of that
metadata and give flat cells (a ``(6,)`` array for a ``(2, 3)`` tensor); here pandas gets one
numpy array of the real shape per cell (None for a null row), as ``samples()`` gives, and
polars gets ``pl.Array(dtype, shape=(2, 3))``.

Where Arrow's pandas conversion loses information or fails, :func:`pandas_frame` converts the
column itself: nulls in integer and bool columns (nullable dtypes), null next to NaN in a float
column (``Float64``), nulls inside integer list cells (object cells of exact ints), integers
that hold nulls at any depth of a struct, map or list (:mod:`.exact_cells`), and fixed-size
binary inside lists (bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.args import check_bool
from dload_arrow.catalog.exact_cells import exact_cells, is_nested
from dload_arrow.errors import SchemaError
from dload_arrow.read.samples import column_values
from dload_arrow.store.rows import field_shape
from dload_arrow.tensor_arrays import is_fixed_shape_tensor

__all__ = ["pandas_frame", "polars_shapes", "tensor_fields", "to_pandas"]


def tensor_fields(schema: pa.Schema) -> list[tuple[int, pa.Field, tuple[int, ...]]]:
    """The tensor columns of ``schema`` (``arrow.fixed_shape_tensor`` ones too): (position,
    field, shape)."""
    out = []
    for i, field in enumerate(schema):
        if is_fixed_shape_tensor(field.type):
            out.append((i, field, tuple(field.type.shape)))
            continue
        shape = field_shape(field)
        if shape is not None and pa.types.is_fixed_size_list(field.type):
            out.append((i, field, shape))
    return out


def to_pandas(table: pa.Table | pa.RecordBatch, nullable: bool = False) -> Any:
    """Any Arrow table (``repo.sql(...)``'s result, ``ds.head(n)``, ``ds.take(...)``) as a
    pandas DataFrame the way ``Dataset.to_pandas()`` makes one: ids above 2**53 in a column
    holding a null stay exact (``Int64``, where pyarrow's own ``to_pandas`` gives float64),
    tensor cells keep their shape. ``nullable=True``: pandas' nullable dtypes for every
    integer and bool column."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise TypeError(f"to_pandas(table): a pyarrow Table or RecordBatch, got "
                        f"{type(table).__name__}; a Dataset has its own ds.to_pandas()")
    return pandas_frame(table, nullable=check_bool("to_pandas", "nullable", nullable))


def pandas_frame(table: pa.Table, nullable: bool = False) -> Any:
    """``table.to_pandas()``, with each tensor cell a numpy array of its shape (or None), and
    integer and bool columns that hold nulls (``nullable``: all of them) as pandas' nullable
    dtypes (``Int64``, ``UInt64``, ``boolean``...): numpy has no integer null, and Arrow's
    default turns such a column into float64, which changes every value above 2**53.

    Likewise a list cell of integers that holds a null is an object array of ints and None
    (the other cells stay integer arrays), as is a float list cell that holds a null when the
    column's items hold NaN too; a list cell of zoned timestamps is an object array of zoned
    datetimes (Arrow gives naive UTC times); and a float column that holds both null and NaN
    is ``Float64`` (null is ``<NA>``, NaN stays NaN); a float column with only one of them
    stays float64, where both read as NaN. Integers that hold a null deeper inside a struct,
    map or list stay exact ints and None too (dicts, tuples and arrays as Arrow gives them).
    """
    try:
        import pandas  # noqa: F401
    except ImportError as e:
        raise ImportError("to_pandas() needs pandas, which is not installed here: "
                          "pip install 'dload-arrow[pandas]' (or read with to_arrow() or "
                          "to_polars())") from e
    table = _binary_leaves(table)
    tensors = tensor_fields(table.schema)
    plain = table if not tensors else table.drop_columns([f.name for _, f, _ in tensors])
    try:
        frame = plain.to_pandas()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise _unconvertible(plain, e) from e
    if tensors:
        for i, field, _ in tensors:  # ascending positions: each lands where it was
            cells = np.empty(table.num_rows, dtype=object)
            # one by one: a slice assignment would broadcast the equal-shaped arrays into 3-D
            for row, value in enumerate(column_values(field, table.column(i))):
                cells[row] = value
            frame.insert(i, field.name, cells)
    shaped = {i for i, _, _ in tensors}
    for i, column in enumerate(table.columns):
        if (column.null_count or nullable) and (pa.types.is_integer(column.type)
                                                or pa.types.is_boolean(column.type)):
            frame.isetitem(i, column.to_pandas(types_mapper=_nullable_dtype))
        elif column.null_count and pa.types.is_floating(column.type) and pc.any(
                pc.is_nan(column)).as_py():
            frame.isetitem(i, _nullable_floats(column))
        elif i in shaped:  # tensor cells: arrays of their shape, made above
            continue
        elif _number_lists(column.type, pa.types.is_integer) and column.num_chunks and any(
                pc.list_flatten(c).null_count or (pa.types.is_fixed_size_list(c.type)
                                                  and c.null_count) for c in column.chunks):
            # (a null fixed-size cell's slots are items too: Arrow makes every cell floats)
            frame.isetitem(i, _exact_list_cells(column))
        elif _number_lists(column.type, pa.types.is_floating) and _null_and_nan(column):
            frame.isetitem(i, _exact_list_cells(column))  # null stays None beside NaN
        elif _number_lists(column.type, _zoned):  # Arrow gives naive UTC: the zone kept
            frame.isetitem(i, _object_cells(column))
        elif is_nested(column.type) and (
                nested := exact_cells(column)) is not None:
            frame.isetitem(i, nested)
    return frame


def _unconvertible(table: pa.Table, e: Exception) -> SchemaError:
    """The error for a column pandas cannot hold (a time of day with nanoseconds), named."""
    for field, col in zip(table.schema, table.columns, strict=True):
        try:
            col.to_pandas()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return SchemaError(
                f"to_pandas(): column {field.name!r} ({field.type}) holds values pandas cannot "
                f"hold ({e}); read it with to_arrow() or to_polars(), or leave it out "
                "(columns=[...])")
    return SchemaError(f"to_pandas() failed: {e}; read the data with to_arrow()")


def _binary_leaves(table: pa.Table) -> pa.Table:
    """``table`` with fixed-size binary inside lists cast to binary: Arrow converts it to
    bytes at the top level, but not as a list's items (ArrowNotImplementedError)."""
    for i, field in enumerate(table.schema):
        typ = _binary_leaf(field.type, top=True)
        if typ != field.type:
            table = table.set_column(i, field.with_type(typ), table.column(i).cast(typ))
    return table


def _binary_leaf(t: pa.DataType, top: bool = False) -> pa.DataType:
    if pa.types.is_fixed_size_binary(t) and not top:
        return pa.binary()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_binary_leaf(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_binary_leaf(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_binary_leaf(t.value_type)), t.list_size)
    return t


def _number_lists(t: pa.DataType, kind: Any) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            ) and kind(t.value_type)


def _zoned(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) and t.tz is not None


def _object_cells(column: pa.ChunkedArray) -> np.ndarray:
    """Each list cell of zoned timestamps as an object array of zoned pandas Timestamps
    (None for a null cell): the items converted at once, then split by the cells' lengths
    (a DatetimeArray per cell would be faster, but pandas cannot commit those back)."""
    cells = np.empty(len(column), dtype=object)
    row = 0
    for chunk in (c for c in column.chunks if len(c)):
        items = pc.list_flatten(chunk).to_pandas().to_numpy(dtype=object)
        lengths = pc.list_value_length(chunk).fill_null(0).to_numpy(zero_copy_only=False)
        nulls = chunk.is_null().to_numpy(zero_copy_only=False)
        for part, null in zip(np.split(items, np.cumsum(lengths)[:-1]), nulls, strict=True):
            cells[row] = None if null else part
            row += 1
    return cells


def _null_and_nan(column: pa.ChunkedArray) -> bool:
    """Whether the items of a float list column hold both a null and a NaN (with only one of
    them, float arrays read both as NaN, as a float column does)."""
    items = [pc.list_flatten(c) for c in column.chunks]
    return any(x.null_count for x in items) and any(
        pc.any(pc.is_nan(x)).as_py() for x in items if len(x))


def _exact_list_cells(column: pa.ChunkedArray) -> np.ndarray:
    """The cells of an integer (or float) list column with nulls inside: None for a null
    cell, an object array of numbers and None for a cell holding a null, a number array
    otherwise (Arrow makes every cell float64, which changes the ints above 2**53 and reads
    a null as NaN)."""
    cells = np.empty(len(column), dtype=object)
    row = 0
    for chunk in column.chunks:
        flat = pc.list_flatten(chunk)  # the items of the non-null cells, in order
        ints = flat.fill_null(0).to_numpy(zero_copy_only=False)
        valid = flat.is_valid().to_numpy(zero_copy_only=False)
        lengths = pc.list_value_length(chunk).fill_null(0).to_numpy(zero_copy_only=False)
        nulls = chunk.is_null().to_numpy(zero_copy_only=False)
        at = 0
        for n, null in zip(lengths.tolist(), nulls.tolist(), strict=True):
            if not null:
                if valid[at:at + n].all():
                    cells[row] = ints[at:at + n].copy()
                else:
                    cell = np.empty(n, dtype=object)
                    cell[:] = [v.item() if ok else None  # a Python int or float
                               for v, ok in zip(ints[at:at + n], valid[at:at + n], strict=True)]
                    cells[row] = cell
            row, at = row + 1, at + n
    return cells


def _nullable_floats(column: pa.ChunkedArray) -> Any:
    """A float column as pandas' ``Float64``/``Float32`` with NaN kept apart from null
    (Arrow's own ``Float64`` conversion turns NaN into ``<NA>``)."""
    import pandas as pd

    typ = pa.float64() if column.type == pa.float64() else pa.float32()
    column = column.cast(typ)  # float16 has no pandas nullable dtype
    values = column.fill_null(0.0).to_numpy()
    mask = column.is_null().to_numpy(zero_copy_only=False)
    return pd.arrays.FloatingArray(values, mask)


def _nullable_dtype(t: pa.DataType) -> Any:
    """pandas' nullable dtype for an Arrow integer or bool type (None: Arrow's default)."""
    import pandas as pd

    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    if pa.types.is_integer(t):
        return pd.api.types.pandas_dtype(str(t).replace("int", "Int").replace("uInt", "UInt"))
    return None


def polars_col(pl: Any, name: str) -> Any:
    """The polars expression of the column named exactly ``name``: ``pl.col`` reads a name
    like ``^x.*$`` as a pattern and ``*`` as every column (another column's data, silently)."""
    if name == "*" or (name.startswith("^") and name.endswith("$")):
        import polars.selectors as cs

        return cs.by_name(name).as_expr()
    return pl.col(name)


def polars_shapes(frame: Any, schema: pa.Schema, pl: Any) -> Any:
    """A polars (Lazy)Frame with its flat tensor columns (``Array(f32, 6)``) given their
    field's shape (``Array(f32, (2, 3))``); null rows stay null.

    Shapes of one dimension are already right; shapes with a zero are left flat (polars
    cannot infer the row count from zero-sized cells).
    """
    exprs: list[Any] = []
    for _, field, shape in tensor_fields(schema):
        col, changed = polars_col(pl, field.name), False
        if is_fixed_shape_tensor(field.type):  # polars keeps Arrow's extension: its storage
            if field.type.permutation not in (None, list(range(len(shape)))) or not hasattr(
                    col, "ext"):  # another axis order, or a polars without .ext: as it is
                continue
            col, changed = col.ext.storage(), True
        if len(shape) > 1 and 0 not in shape:
            col, changed = pl.when(col.is_not_null()).then(col.reshape((-1, *shape))), True
        if changed:
            exprs.append(col.alias(field.name))
    return frame.with_columns(exprs) if exprs else frame
