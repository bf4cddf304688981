"""Each row's bytes of values: what a shuffled chunk is cut by, so one take stays small.

jemalloc (Arrow's allocator here, ``allocator.py``) gives a freed buffer of 8 MiB or more back
to the kernel at once, so a take into such a buffer faults every page in afresh: chunks of
1,024 rows of 10 KB images were 277k page faults an epoch and half the windowed rate
(bench/notes/speed-work.md, "Twenty-second session"). A shuffled chunk therefore ends after
the rows whose values fit :data:`CHUNK_BYTES` (:func:`leading_rows`).

A restored position must cut the same chunks, so the measure depends only on the rows' data
and types: never on how a window holds them (items or Arrow, which columns it copies value
by value), which in a full shuffle depends on the order its units arrived in.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import numpy_values
from dload_arrow.pipeline.views import is_view

__all__ = ["CHUNK_BYTES", "Sizes", "binary_type", "leading_rows", "offsets", "primitive",
           "row_bytes", "wide"]

CHUNK_BYTES = 4 << 20


def offsets(arr: pa.Array, kind: type) -> np.ndarray:
    """The ``len(arr) + 1`` value offsets of a binary or list array (its slice applied)."""
    raw: np.ndarray = np.frombuffer(arr.buffers()[1], kind)
    return raw[arr.offset:arr.offset + len(arr) + 1].astype(np.int64)


def primitive(t: pa.DataType) -> bool:
    """A fixed-width number type of whole bytes."""
    return (pa.types.is_integer(t) or pa.types.is_floating(t)) and t.bit_width % 8 == 0


def binary_type(t: pa.DataType) -> bool:
    """Binary or string, 32- or 64-bit offsets (not a view type: see ``is_view``)."""
    return (pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t)
            or pa.types.is_large_string(t))


def wide(t: pa.DataType) -> bool:
    """A type with 64-bit offsets."""
    return pa.types.is_large_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_list(t)


def row_bytes(batch: pa.RecordBatch) -> np.ndarray:
    """The bytes of each row's values: binary and string values (views too), the elements of
    lists of numbers, fixed-size binary and fixed-size lists. Other columns, and nulls, count
    nothing (a row's number or two are not what makes a take large)."""
    total = np.zeros(batch.num_rows, np.int64)
    for col in batch.columns:
        sizes = _column_bytes(col)
        if sizes is not None:
            total += sizes
    return total


def _column_bytes(a: pa.Array) -> np.ndarray | None:
    t, n = a.type, len(a)
    if binary_type(t):
        sizes = np.diff(offsets(a, np.int64 if wide(t) else np.int32))
    elif is_view(t):  # 16 bytes a view, its length first
        raw = np.frombuffer(a.buffers()[1], np.int32)
        sizes = raw[(np.arange(n, dtype=np.int64) + a.offset) * 4].astype(np.int64)
    elif pa.types.is_fixed_size_binary(t):
        sizes = np.full(n, t.byte_width, np.int64)
    elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and primitive(t.value_type):
        sizes = np.diff(offsets(a, np.int64 if wide(t) else np.int32)) * (
            t.value_type.bit_width // 8)
    elif pa.types.is_fixed_size_list(t) and primitive(t.value_type):
        sizes = np.full(n, t.list_size * (t.value_type.bit_width // 8), np.int64)
    else:
        return None
    if a.null_count:
        sizes[~numpy_values(a.is_valid())] = 0
    return sizes


def leading_rows(sizes: np.ndarray, limit: int = CHUNK_BYTES) -> int:
    """How many of the rows of ``sizes`` (bytes each, in order) fit ``limit`` bytes; at
    least one."""
    if not len(sizes):
        return 0
    return max(1, int(np.searchsorted(np.cumsum(sizes), limit, "right")))


class Sizes:
    """Row sizes appended unit by unit (a full shuffle's window, as its units arrive) and
    read by row number. One thread appends; readers read rows already appended."""

    def __init__(self) -> None:
        self._buf = np.zeros(1024, np.int64)
        self._n = 0

    def append(self, sizes: np.ndarray) -> None:
        """Add the next rows' sizes."""
        end = self._n + len(sizes)
        if end > len(self._buf):  # a new buffer: readers holding the old one still see
            buf = np.zeros(max(end, 2 * len(self._buf)), np.int64)  # the rows they read
            buf[:self._n] = self._buf[:self._n]
            self._buf = buf
        self._buf[self._n:end] = sizes
        self._n = end

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        return self._buf[rows]
