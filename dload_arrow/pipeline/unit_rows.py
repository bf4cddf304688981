"""Rows of several decoded units, taken in any order with one copy of each value.

A shuffled window's rows sit in the record batches its units were decoded into. Arrow's
``take`` over several batches (a chunked array) concatenates them first, so every row is
copied twice: once into the concatenation, once into the output. For columns of large values
(images, token sequences: :data:`LARGE_VALUE_BYTES` or more a row on average)
:class:`UnitRows` copies each taken value once, straight from the unit that holds it: each
unit's column is viewed as binary views of its own buffers (zero-copy), a take gathers the
16-byte views, and Arrow's cast of the views to binary copies the bytes, in C++. Small columns
(labels, short strings) are concatenated once and taken by Arrow.

Large values are supported for binary and string columns (32- and 64-bit offsets),
fixed-size binary, and lists, large lists and fixed-size lists of a fixed-width number type
without nulls inside; a column of any other type is concatenated, and so is every column
with pyarrow 16-18 (they lack a step of the view path). Measurements are in
docs/DESIGN.md (Fetcher) and bench/notes/speed-work.md ("Sixth session").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import int64_array, numpy_values
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.row_bytes import binary_type, primitive, row_bytes, wide
from dload_arrow.pipeline.row_bytes import offsets as value_offsets
from dload_arrow.pipeline.views import (
    as_views,
    is_view,
    view_array,
    view_type,
    views_work,
    with_views,
)

__all__ = ["LARGE_VALUE_BYTES", "UnitRows"]

# A column whose values average this many bytes is copied value by value from its units.
LARGE_VALUE_BYTES = 1024


class UnitRows:
    """The rows of ``batches`` (one schema) as if concatenated, without concatenating.

    Args:
        batches: the decoded units, in the order their rows are numbered.
        once: the rows will be taken once (a whole window gathered): small columns stay
            chunked, for Arrow's take over chunks, instead of being concatenated first.
    """

    def __init__(self, batches: Sequence[pa.RecordBatch], once: bool = False,
                 sizes: np.ndarray | None = None) -> None:
        if not batches:
            raise ConfigError("UnitRows needs at least one batch (the schema comes from it)")
        self.batches = list(batches)
        self.schema = batches[0].schema
        counts = np.fromiter((b.num_rows for b in batches), np.int64, len(batches))
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        self.num_rows = int(self.starts[-1])
        self._once = once
        self._built: list[pa.Array | pa.ChunkedArray | _Values] | None = None
        self._sizes = sizes  # (when known: each row's row_bytes)

    @property
    def _columns(self) -> list[pa.Array | pa.ChunkedArray | _Values]:
        """The columns as taken from: built on the first take that is not a slice (a
        sequential window, one unit read in order, never needs them)."""
        if self._built is None:
            self._built = self._build()
        return self._built

    def prepare(self) -> UnitRows:
        """Build the columns now (on the window thread, instead of in the first take)."""
        _ = self._columns
        return self

    def _build(self) -> list[pa.Array | pa.ChunkedArray | _Values]:
        batches, once = self.batches, self._once
        columns: list[pa.Array | pa.ChunkedArray | _Values] = []
        for i, field in enumerate(self.schema):
            arrays = [b.column(i) for b in batches]
            large = is_view(field.type) or (self.num_rows and sum(  # (views: never copied)
                a.nbytes for a in arrays) >= LARGE_VALUE_BYTES * self.num_rows)
            values = _Values.of(field.type, arrays) if large else None
            if values is not None:
                columns.append(values)
            elif once and len(arrays) > 1:
                columns.append(pa.chunked_array(arrays, field.type))
            else:
                columns.append(arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays))
        return columns

    def extended(self, more: Sequence[pa.RecordBatch]) -> UnitRows:
        """These rows, then the rows of ``more``; the columns built for these are reused
        (views and concatenations of the new units only: a full shuffle's window grows)."""
        out = UnitRows(self.batches + list(more), once=self._once)
        if self._sizes is not None and more:
            out._sizes = np.concatenate([self._sizes, *(row_bytes(b) for b in more)])
        if self._built is None or not more or not self.num_rows:  # (no rows: undecided)
            return out
        joined: list[pa.Array | pa.ChunkedArray | _Values] = []
        for i, (field, old) in enumerate(zip(self.schema, self._built, strict=True)):
            arrays = [b.column(i) for b in more]
            if isinstance(old, _Values):
                new = _Values.of(field.type, arrays)
                if new is None:  # e.g. a buffer over 2 GB: build everything again
                    return out
                joined.append(old.joined(new))
            elif isinstance(old, pa.ChunkedArray):
                joined.append(pa.chunked_array(old.chunks + arrays, field.type))
            else:
                joined.append(pa.concat_arrays([old, *arrays]))
        out._built = joined
        return out

    @property
    def copied_columns(self) -> list[str]:
        """The columns whose values are copied from their units (the rest are concatenated)."""
        cols = zip(self.schema, self._columns, strict=True)
        return [f.name for f, c in cols if isinstance(c, _Values)]

    def sizes(self) -> np.ndarray:
        """Each row's bytes of values (``row_bytes``: the measure a shuffled chunk is cut by,
        whatever the columns' classification here)."""
        if self._sizes is None:
            self._sizes = np.concatenate([row_bytes(b) for b in self.batches])
        return self._sizes

    def take(self, offs: np.ndarray, views: bool = False) -> pa.RecordBatch:
        """Rows ``offs`` (numbered across the units) as one batch.

        Consecutive rows of one unit are a zero-copy slice of it. ``views``: binary and string
        columns come out as view types, their large values not copied (pipeline/views.py).
        """
        offs = np.asarray(offs, np.int64)
        n = len(offs)
        if n and int(offs[-1]) - int(offs[0]) == n - 1 and np.all(np.diff(offs) == 1):
            u = int(np.searchsorted(self.starts, offs[0], "right")) - 1
            if int(offs[-1]) < int(self.starts[u + 1]):
                out = self.batches[u].slice(int(offs[0] - self.starts[u]), n)
                return as_views(out) if views else out
        indices = int64_array(offs)
        arrays = []
        for col in self._columns:
            taken = col.take(offs, indices, views) if isinstance(col, _Values) else \
                col.take(indices)
            arrays.append(taken.combine_chunks() if isinstance(taken, pa.ChunkedArray)
                          else taken)
        if views:
            return with_views(arrays, self.schema)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _as_views(t: pa.DataType, a: pa.Array) -> pa.Array | None:
    """Array ``a`` as binary views of its values' bytes, sharing its data (None: unsupported).

    Binary and string values view their own bytes; a list's, fixed-size list's or fixed-size
    binary's value views the bytes of its elements (without validity: kept apart).
    """
    if binary_type(t):
        return a.view(pa.large_binary() if wide(t) else pa.binary()).cast(pa.binary_view())
    if is_view(t):  # already views (a pipeline made with views=True): validity kept apart
        bufs = a.buffers()
        return pa.Array.from_buffers(pa.binary_view(), len(a), [None, *bufs[1:]],
                                     offset=a.offset)
    if pa.types.is_fixed_size_binary(t):
        width, offsets = t.byte_width, np.arange(len(a) + 1, dtype=np.int64) + a.offset
        data = a.buffers()[1]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        child = a.values  # the whole child: the offsets below apply the slice
        if not primitive(t.value_type) or child.null_count:
            return None
        width = t.value_type.bit_width // 8
        if pa.types.is_fixed_size_list(t):
            offsets = (np.arange(len(a) + 1, dtype=np.int64) + a.offset) * t.list_size
        else:
            offsets = value_offsets(a, np.int64 if wide(t) else np.int32)
        offsets = offsets + child.offset
        data = child.buffers()[1]
    else:
        return None
    return pa.Array.from_buffers(pa.large_binary(), len(a), [
        None, pa.py_buffer(offsets * width), data]).cast(pa.binary_view())


class _Values:
    """A column of large values kept in its units; :meth:`take` copies each value once.

    Each row is a binary view (16 bytes: length, and where its bytes are) into its unit's
    data buffer. A take gathers the views, and Arrow's cast to binary copies the bytes they
    point at into one buffer, which becomes the output column's data.
    """

    def __init__(self, t: pa.DataType, views: pa.Array, valid: np.ndarray | None) -> None:
        self.type = t
        bufs = views.buffers()
        self._views = pa.Array.from_buffers(pa.binary(16), len(views), [None, bufs[1]],
                                            offset=views.offset)
        self._data = bufs[2:]
        self._valid = valid

    @classmethod
    def of(cls, t: pa.DataType, arrays: Sequence[pa.Array]) -> _Values | None:
        """The column ``arrays`` as values, or None when its type is not supported."""
        if not views_work():
            return None
        parts = []
        for a in arrays:
            try:
                v = _as_views(t, a)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # e.g. a buffer over 2 GB
                return None
            if v is None:
                return None
            parts.append(v)
        valid = None
        if any(a.null_count for a in arrays):
            valid = np.concatenate([numpy_values(a.is_valid())
                                    for a in arrays])
        return cls(t, parts[0] if len(parts) == 1 else pa.concat_arrays(parts), valid)

    def joined(self, other: _Values) -> _Values:
        """These values, then ``other``'s (views concatenated, bytes shared)."""
        def views(v: _Values) -> pa.Array:
            return pa.Array.from_buffers(pa.binary_view(), len(v._views),
                                         [None, v._views.buffers()[1], *v._data],
                                         offset=v._views.offset)

        valid = None
        if self._valid is not None or other._valid is not None:
            valid = np.concatenate([
                v._valid if v._valid is not None else np.ones(len(v._views), bool)
                for v in (self, other)])
        return _Values(self.type, pa.concat_arrays([views(self), views(other)]), valid)

    def take(self, offs: np.ndarray, indices: pa.Array, views: bool = False) -> pa.Array:
        """Rows ``offs`` (``indices``: the same as an Arrow array) as one array, each value
        copied once (``views``: binary and string values not copied, as view types)."""
        n = len(offs)
        gathered = self._views.take(indices).buffers()[1]
        t = self.type
        large = wide(t)
        validity, nulls = None, 0
        if self._valid is not None:
            valid = self._valid[offs]
            nulls = n - int(np.count_nonzero(valid))
            if nulls:
                validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        vt = t if is_view(t) else view_type(t) if views else None
        if vt is not None:  # the gathered views are the column: no value copied
            return view_array(vt, n, validity, gathered, self._data, nulls)
        out = pa.Array.from_buffers(pa.binary_view(), n, [None, gathered, *self._data]).cast(
            pa.large_binary() if large else pa.binary())
        _, offsets, data = out.buffers()
        if binary_type(t):
            return pa.Array.from_buffers(t, n, [validity, offsets, data], null_count=nulls)
        if pa.types.is_fixed_size_binary(t):
            return pa.Array.from_buffers(t, n, [validity, data], null_count=nulls)
        width = t.value_type.bit_width // 8
        child = pa.Array.from_buffers(t.value_type, len(data) // width, [None, data])
        if pa.types.is_fixed_size_list(t):
            return pa.Array.from_buffers(t, n, [validity], null_count=nulls, children=[child])
        elements = np.frombuffer(offsets, np.int64 if large else np.int32)[:n + 1] // width
        return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(elements)],
                                     null_count=nulls, children=[child])
