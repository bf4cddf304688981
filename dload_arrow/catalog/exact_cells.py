"""pandas cells of nested columns (structs, maps, lists of lists) that keep integers exact.

Arrow converts a nested column by converting each child array on its own, so an integer
child that holds a null becomes float64, in every cell, and a value above 2**53 changes
(``{'a': 2**60 + 1}`` reads as ``{'a': 1.152921504606847e+18}``). :func:`exact_cells` gives
such a column's cells with the integer children as Python ints and None; everything else in
a cell stays what Arrow gives (dicts for structs, lists of (key, value) tuples for maps,
numpy arrays for lists), so only the broken values change.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["exact_cells", "is_nested"]


def is_nested(t: pa.DataType) -> bool:
    """Whether ``t`` is a struct, a map or a list: a type whose children Arrow converts."""
    return (pa.types.is_struct(t) or pa.types.is_map(t) or pa.types.is_list(t)
            or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))


def exact_cells(column: pa.ChunkedArray) -> np.ndarray | None:
    """The cells of a nested column as an object array, with integer children that hold a
    null kept exact; None where no integer inside the column holds a null (Arrow's own
    conversion is right)."""
    per_chunk = [_exact(chunk) for chunk in column.chunks]
    if all(cells is None for cells in per_chunk):
        return None
    out = np.empty(len(column), dtype=object)
    at = 0
    for chunk, cells in zip(column.chunks, per_chunk, strict=True):
        values = cells if cells is not None else chunk.to_pandas().tolist()
        for value in values:  # one by one: equal-shaped arrays would broadcast
            out[at] = value
            at += 1
    return out


def _exact(array: pa.Array) -> list[Any] | None:
    """One Python value per element of ``array``, or None where Arrow converts it exactly."""
    t = array.type
    if pa.types.is_integer(t):
        return array.to_pylist() if array.null_count else None
    if pa.types.is_struct(t):
        return _struct(array)
    if pa.types.is_map(t):
        return _map(array)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _list(array)
    return None


def _struct(array: pa.StructArray) -> list[Any] | None:
    children = array.flatten()  # offset applied, the struct's nulls merged in
    fixed = [_exact(child) for child in children]
    if all(values is None for values in fixed):
        return None
    rows: list[Any] = array.to_pandas().tolist()  # dicts (or None) as Arrow gives them
    for name, values in zip(array.type.names, fixed, strict=True):
        if values is not None:
            for row, cell in enumerate(rows):
                if cell is not None:
                    cell[name] = values[row]
    return rows


def _map(array: pa.MapArray) -> list[Any] | None:
    t = array.type
    entries = pa.list_(pa.field("entries", pa.struct([t.key_field, t.item_field]),
                                nullable=False))
    flat = pc.list_flatten(array.cast(entries))
    keys, items = (_exact(child) for child in flat.flatten())
    if keys is None and items is None:
        return None
    rows: list[Any] = array.to_pandas().tolist()  # lists of (key, value) tuples, or None
    at = 0
    for row, cell in enumerate(rows):
        if cell is None:
            continue
        rows[row] = [(k if keys is None else keys[at + n], v if items is None else items[at + n])
                     for n, (k, v) in enumerate(cell)]
        at += len(cell)
    return rows


def _list(array: pa.Array) -> list[Any] | None:
    flat = pc.list_flatten(array)  # the items of the non-null cells, in order
    items = _exact(flat)
    if items is None and pa.types.is_fixed_size_list(array.type) and array.null_count and (
            pa.types.is_integer(flat.type)):  # a null cell's slots turn Arrow's items to floats
        items = flat.to_pylist()
    if items is None:
        return None
    integers = pa.types.is_integer(flat.type)
    lengths = pc.list_value_length(array).fill_null(0).to_numpy(zero_copy_only=False)
    rows: list[Any] = []
    at = 0
    for n, null in zip(lengths.tolist(), array.is_null().to_numpy(zero_copy_only=False).tolist(),
                       strict=True):
        if null:
            rows.append(None)
            continue
        part = items[at:at + n]
        if integers and None not in part:
            cell = np.array(part, dtype=flat.type.to_pandas_dtype())
        else:
            cell = np.empty(n, dtype=object)
            for j, value in enumerate(part):
                cell[j] = value
        rows.append(cell)
        at += n
    return rows
