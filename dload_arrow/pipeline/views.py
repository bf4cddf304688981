"""Binary and string columns as Arrow view types: shuffled batches without copying values.

A pipeline made with ``views=True`` (``ds.pipeline(views=True)``, ``ds.shuffle(...,
views=True)``, ``ds.batches(views=True)``) yields its ``binary`` and ``string`` columns (and
their ``large_`` forms) as ``binary_view`` and ``string_view``: each value is a 16-byte view
(its length, and where its bytes are) into the buffer it was decoded into. A windowed or full
shuffle then gathers 16 bytes a row instead of copying each value into a fresh buffer, which
is most of what a shuffled batch of large values (images, documents) costs beyond a
sequential one (bench/notes/speed-work.md). The values are the same; only the Arrow type
differs, and a batch keeps the decoded units its values point into alive while it is held
(only those: :func:`view_array` drops the buffers of the window's other units).

pyarrow 26 lacks many compute kernels for view types (``take``, ``filter``, ``sort_by``,
``binary_length``, most string functions, comparisons against plain strings). The pipeline's
own steps work on them (:func:`take_rows`, :func:`filter_rows`); a user's own Arrow calls
may need ``cast`` to ``binary``/``string`` first (docs/TUTORIAL.md, "Views").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import binary_array, bool_array, int64_array, numpy_values

__all__ = ["as_views", "filter_rows", "has_views", "is_view", "take_rows", "view_schema",
           "view_array", "view_type", "views_work", "with_views"]

# A view of a value this long or shorter holds the bytes inline (Arrow's columnar format).
_INLINE_BYTES = 12


def is_view(t: pa.DataType) -> bool:
    """Whether ``t`` is ``binary_view`` or ``string_view``."""
    return bool(pa.types.is_binary_view(t) or pa.types.is_string_view(t))


def view_type(t: pa.DataType) -> pa.DataType | None:
    """The view type a column of type ``t`` comes out as (None: it stays ``t``)."""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.binary_view()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.string_view()
    return None


def view_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its binary and string fields as view types (metadata kept)."""
    fields = []
    for f in schema:
        t = view_type(f.type)
        fields.append(f if t is None else f.with_type(t))
    return pa.schema(fields, metadata=schema.metadata)


def has_views(batch: pa.RecordBatch) -> bool:
    """Whether ``batch`` has a view-typed column."""
    return any(is_view(t) for t in batch.schema.types)


def as_views(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its binary and string columns cast to view types.

    The cast shares the column's data buffer (the views point into it): no value is copied.
    """
    if not any(view_type(t) is not None for t in batch.schema.types):
        return batch
    return with_views(batch.columns, batch.schema)


def with_views(arrays: list[pa.Array], schema: pa.Schema) -> pa.RecordBatch:
    """A batch of ``arrays`` (of ``schema``'s fields, plain or already views) with its
    binary and string columns as views (``schema``'s nullability and metadata kept)."""
    out = view_schema(schema)
    return pa.RecordBatch.from_arrays(
        [a if a.type == t else a.cast(t) for a, t in zip(arrays, out.types, strict=True)],
        schema=out)


def view_array(t: pa.DataType, n: int, validity: pa.Buffer | None, views: pa.Buffer,
               data: Sequence[pa.Buffer], nulls: int = -1) -> pa.Array:
    """A ``t`` (view type) array of ``n`` rows: ``views`` (16 bytes a row, from row 0) over
    the buffers of ``data`` its values point into, the others left out.

    Gathered views point into a few of a window's units; keeping every unit's buffer would
    keep (and pickle, or write to IPC) the whole window with a batch of a few rows.
    """
    if len(data) > 1 and n:
        v = np.frombuffer(views, np.int32, n * 4).reshape(n, 4)  # length, prefix, buffer, offset
        out = v[:, 0] > _INLINE_BYTES
        at = v[out, 2]
        used = np.zeros(len(data), bool)
        if not len(at) or (int(at.min()) >= 0 and int(at.max()) < len(data)):
            used[at] = True
            if not used.all():
                w = v.copy()
                w[out, 2] = (np.cumsum(used) - 1)[at]
                views = pa.py_buffer(w)
                data = [d for d, u in zip(data, used, strict=True) if u]
    return pa.Array.from_buffers(t, n, [validity, views, *data], null_count=nulls)


def _take_view(col: pa.Array, indices: pa.Array) -> pa.Array:
    """Rows ``indices`` of view column ``col``: its 16-byte views gathered, bytes shared."""
    bufs = col.buffers()
    fixed = pa.Array.from_buffers(pa.binary(16), len(col), [bufs[0], bufs[1]],
                                  offset=col.offset)
    taken = fixed.take(indices)
    got = taken.buffers()
    return view_array(col.type, len(taken), got[0], got[1], bufs[2:], taken.null_count)


def take_rows(batch: pa.RecordBatch, indices: np.ndarray) -> pa.RecordBatch:
    """``batch.take(indices)``, also for view-typed columns (Arrow has no take for them)."""
    at = int64_array(np.asarray(indices, np.int64))
    if not has_views(batch):
        return batch.take(at)
    arrays = [_take_view(c, at) if is_view(c.type) else c.take(at) for c in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def filter_rows(batch: pa.RecordBatch, keep: Any) -> pa.RecordBatch:
    """``batch.filter(keep)`` (a boolean mask or a ``pyarrow.compute`` Expression), also for
    view-typed columns.

    An Expression is evaluated on the columns as binary and string (Arrow's filter plan
    takes no views), so a batch with views filtered by an Expression copies its values once.
    """
    if not has_views(batch):  # (pa.array of numpy imports pandas: DESIGN, "No pandas")
        return batch.filter(bool_array(keep) if isinstance(keep, np.ndarray) else keep)
    if isinstance(keep, pc.Expression):
        plain = pa.RecordBatch.from_arrays(
            [c.cast(pa.large_string() if pa.types.is_string_view(c.type) else pa.large_binary())
             if is_view(c.type) else c for c in batch.columns], names=batch.schema.names)
        out = plain.filter(keep)
        return pa.RecordBatch.from_arrays(
            [o.cast(t) if is_view(t) else o for o, t in zip(out.columns, batch.schema.types,
                                                            strict=True)],
            schema=batch.schema)
    if isinstance(keep, pa.Array):  # Arrow's filter drops the rows of a null mask slot
        keep = numpy_values(keep.fill_null(False))
    return take_rows(batch, np.flatnonzero(np.asarray(keep, dtype=bool)))


@cache
def views_work() -> bool:
    """Whether this pyarrow makes, concatenates, rebuilds and casts back binary views.

    pyarrow 16-17 cannot cast binary to views, and 18 cannot rebuild a view array over
    several data buffers (``Array.from_buffers``); there every column is concatenated.
    """
    a = binary_array([b"a" * 20, b"", b"b" * 13])
    try:
        views = pa.concat_arrays([a.cast(pa.binary_view()), a.cast(pa.binary_view())])
        bufs = views.buffers()
        taken = pa.Array.from_buffers(pa.binary(16), len(views), [None, bufs[1]]).take(
            int64_array([5, 0]))
        out = pa.Array.from_buffers(pa.binary_view(), 2, [None, taken.buffers()[1], *bufs[2:]])
        return bool(out.cast(pa.binary()).equals(binary_array([b"b" * 13, b"a" * 20])))
    except (pa.ArrowException, ValueError, TypeError):
        return False
