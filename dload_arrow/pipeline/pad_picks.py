"""Which columns ``pad_collate`` pads where ``columns=`` leaves it to the batch: stored list
columns of numbers, and where no stored type says (after a ``map``, a torch DataLoader's
``collate_fn``) columns of number sequences, rows of such rows included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.pad_holes import fill_nulls
from dload_arrow.pipeline.pad_types import NUMBERS

__all__ = ["is_sequence", "padded_by_default", "rows_of_rows", "stored_type"]


def is_sequence(v: Any) -> bool:
    """A row a column pads: a list, a tuple or an array (numpy, or a CPU tensor)."""
    return isinstance(v, list | tuple) or (
        hasattr(v, "__array__") and getattr(v, "ndim", 0) >= 1)


def _numeric_sequences(cells: list[Any]) -> bool:
    """Whether a column's cells are sequences of numbers (None too), one at least non-empty:
    what ``columns=None`` pads where no stored type says (lists of strings stay lists)."""
    if not all(c is None or is_sequence(c) for c in cells):
        return False
    try:
        arrays = [np.asarray(c) for c in cells if c is not None and len(c)]
    except (ValueError, TypeError, RuntimeError):  # ragged rows, bfloat16 tensors: left as
        return False  # they are (columns= names them, and the error says what to do)
    return bool(arrays) and all(a.dtype.kind in NUMBERS for a in arrays)


def stored_type(schema: pa.Schema | None, name: str
            ) -> tuple[np.dtype, tuple[int, ...] | None, tuple[int, ...]] | None:
    """A stored list column's number type, its rows' inner shape (``list<int32>``: int32,
    (); ``list<fixed_size_list<float, 80>>``: float32, (80,); ``list<list<float>>``:
    float32, None: rows of rows whose lengths the data tells, QA robotics60) and the sizes
    of the lists inside its rows (-1: variable; rows of frames (-1,): a batch without one pads
    to (n, 0, 0))."""
    if schema is None or name not in schema.names:
        return None
    t = schema.field(name).type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return None
    t, inner, ragged = t.value_type, [], False
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        ragged |= not pa.types.is_fixed_size_list(t)
        inner.append(getattr(t, "list_size", -1))
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return np.dtype(t.to_pandas_dtype()), None if ragged else tuple(inner), tuple(inner)
    return None


def rows_of_rows(cells: list[Any]) -> bool:
    """Whether a column's cells are rows of rows of numbers (None too) of two lengths, which
    make no one array (``[[1, 2], [3]]``): given as lists with their ``_length`` and
    ``_mask``, named in ``columns=`` or not, so every batch has the same keys (QA review64i)."""
    inner = [x for c in cells if c is not None for x in (c if is_sequence(c) else [c])]
    if not inner or not all(c is None or is_sequence(c) for c in cells):
        return False
    try:
        arrays = [np.asarray(x) for x in inner if x is not None]
    except (ValueError, TypeError, RuntimeError):
        return False
    return all(is_sequence(x) for x in inner if x is not None) and any(
        a.size for a in arrays) and all(a.dtype.kind in NUMBERS for a in arrays if a.size) and (
        len({a.shape for a in arrays}) > 1)  # (one width: values a dtype= refuses, QA 65b)


def padded_by_default(cells: list[Any], schema: pa.Schema | None, name: str
                       ) -> bool | None:
    """A stored list column of numbers (in every batch: the same keys each time), or, where
    no stored type says (after a map), a column of number sequences; None where nothing
    tells (rows holding no value: null items, empty rows, null rows)."""
    if (s := stored_type(schema, name)) is not None and s[1] is not None:  # empty rows, rows
        return all(c is None or is_sequence(c) for c in cells)  # holding None: padded too
    if s is not None:  # stored rows of rows (list<list<T>>): a null frame takes the pad; a
        frameless = all(c is None or (is_sequence(c) and all(  # batch without a frame pads
            x is None or not len(x) for x in c)) for c in cells)  # at the stored rank (QA
        return frameless or _numeric_sequences(fill_nulls(cells, ())[0])  # review64)
    if schema is not None and name in schema.names:  # stored, not a list of numbers: text
        return False  # lists, a fixed-size embedding (n, 64) as batch() gives it (QA review63b)
    # rows holding None: a null item takes the pad, as in stored rows (QA recsys63), if a
    # number says what they hold (a batch of [None] rows of a text column: QA review63b)
    if not all(c is None or is_sequence(c) for c in cells):
        return False
    if not any(not isinstance(c, list | tuple) or any(x is not None for x in c)
               for c in cells if c is not None and len(c)):
        return None
    return _numeric_sequences(fill_nulls(cells, ())[0]) or rows_of_rows(cells)
