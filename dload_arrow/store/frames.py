"""An episode's frames given as numpy arrays, built into a list of fixed-size lists from
their buffers.

A sample's ``(T, 48)`` uint8 array into ``list<fixed_size_list<uint8, 48>>`` went through
``.tolist()``, a Python int per byte: 98 MB of frames took 13.6 s and 2 GB to commit, against
0.8 s as one frame a sample (QA rl66). Arrays of exactly the column's dtype and frame shape
need no check: their values are stored as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["CHUNK_BYTES", "frame_of", "frames_array", "frames_misfit", "held_bytes"]

CHUNK_BYTES = 64 << 20  # a commit's chunk of samples is cut at this many bytes, about


def frame_of(t: pa.DataType) -> tuple[tuple[int, ...], pa.DataType] | None:
    """``(frame shape, number type)`` of a list of fixed-size lists of numbers; else None."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return None
    shape, leaf = [], t.value_type
    while pa.types.is_fixed_size_list(leaf):
        shape.append(leaf.list_size)
        leaf = leaf.value_type
    numeric = (pa.types.is_integer(leaf) or pa.types.is_floating(leaf)
               or pa.types.is_boolean(leaf))
    return (tuple(shape), leaf) if shape and numeric else None


def frames_array(values: Sequence[Any], t: pa.DataType) -> pa.Array | None:
    """``values`` (numpy arrays of frames, or None) as an array of type ``t``; None when
    ``t`` is no list of fixed-size lists or a value is not an array of its dtype and shape
    (then built as before, with its checks)."""
    got = frame_of(t)
    if got is None or not values:
        return None
    shape, leaf = got
    dtype = np.dtype(leaf.to_pandas_dtype())
    if not all(v is None or (type(v) is np.ndarray and v.dtype == dtype  # (not a masked
                             and v.shape[1:] == shape) for v in values):  # array: QA 66c)
        return None
    present = [v for v in values if v is not None]
    if not present:
        return None
    flat = np.concatenate([np.ascontiguousarray(v).reshape(-1) for v in present])
    lengths = np.array([0 if v is None else len(v) for v in values], dtype=np.int64)
    inner: pa.Array = pa.array(flat, type=leaf)
    kind = t.value_type
    sizes = []
    while pa.types.is_fixed_size_list(kind):
        sizes.append(kind)
        kind = kind.value_type
    for fixed in reversed(sizes):
        inner = pa.FixedSizeListArray.from_arrays(inner, type=fixed)
    large = pa.types.is_large_list(t)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]),
                       type=pa.int64() if large else pa.int32())
    mask = pa.array([v is None for v in values]) if len(present) < len(values) else None
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(offsets, inner, type=t, mask=mask)


def frames_misfit(v: Any, t: pa.DataType) -> str | None:
    """Why the array ``v`` does not fit ``t``, a list of fixed-size lists, by its frame shape
    (QA rl66: "store a wider type" for frames of 60 values where the column's hold 48)."""
    got = frame_of(t)
    if got is None or not isinstance(v, np.ndarray | list) or not len(v):
        return None
    try:  # (an array reaches here as its lists)
        shape = np.shape(v[0])
    except ValueError:  # ragged
        return None
    if not shape:  # one flat frame given for an episode (QA review66d)
        return (f"is a flat array of {len(v)} values, but the column holds frames of shape "
                f"{got[0]}: give a (frames, {', '.join(map(str, got[0]))}) array")
    if shape == got[0]:
        return None
    return (f"holds frames of shape {tuple(shape)}, but the column's frames have shape "
            f"{got[0]}: give each frame that shape, or store the other shape in a new dataset "
            "(or as a column of its own)")


def held_bytes(sample: Any) -> int:
    """About how many bytes a sample dict holds: its bytes, text and arrays, in lists and
    dicts too (a commit's chunk of samples is cut by them, not only by count: QA lowmem66,
    review66d); a list of numbers counts 8 bytes an item without walking it."""
    return sum(map(_held, sample.values())) if isinstance(sample, Mapping) else 8


def _held(v: Any) -> int:
    if isinstance(v, bytes | bytearray | str):
        return len(v)
    if isinstance(v, np.ndarray):
        return int(v.nbytes)
    if isinstance(v, list | tuple):
        first = next((x for x in v if x is not None), None)  # ([None, blob]: QA 66e)
        nested = isinstance(first, bytes | bytearray | str | np.ndarray | list | tuple | Mapping)
        return sum(map(_held, v)) if nested else 8 * len(v) + 8
    return sum(map(_held, v.values())) if isinstance(v, Mapping) else 8
