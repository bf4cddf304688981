"""The statistics a manifest keeps for a shard's columns: min, max and nulls per row group
and per shard (``store/manifest.py`` writes them, ``catalog/pruning.py`` and ``describe``
read them).

A text bound longer than :data:`MAX_TEXT_BOUND` characters is not kept: the row group's
bounds are both None, "unknown" (pruning keeps the row group, ``describe`` says no min/max
rather than one of the others'). Without the limit a column of documents put every row
group's first and last document, whole, into the manifest that every reader loads (300
texts of 96 KB: a 2.8 MB manifest for an 11.6 KB shard).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["MAX_TEXT_BOUND", "column_bounds", "shard_bounds", "without_nan"]

#: Text bounds longer than this (characters) are not kept (module docstring).
MAX_TEXT_BOUND = 256


def column_bounds(col: Any, *, long_text: bool = False) -> tuple[Any, Any, int]:
    """``(min, max, nulls)`` of one row group's column; ``long_text``: keep text bounds of
    any length (the keys, which lookups need exactly)."""
    if pa.types.is_float16(col.type):  # Arrow has no min_max kernel for half floats
        col = col.cast(pa.float32())
    if pa.types.is_timestamp(col.type) or pa.types.is_duration(col.type):
        col = col.cast(pa.int64())  # ticks: exact (a datetime drops nanoseconds; -2**63 is NaT)
    elif pa.types.is_time(col.type):  # ticks after midnight (a datetime.time drops ns)
        col = col.cast(pa.int32() if col.type.bit_width == 32 else pa.int64())
    mm = pc.min_max(col)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if not long_text and any(isinstance(b, str) and len(b) > MAX_TEXT_BOUND for b in (lo, hi)):
        return None, None, col.null_count
    return lo, hi, col.null_count


def shard_bounds(per: Sequence[tuple[Any, Any, int]], rows: Sequence[int]
                 ) -> tuple[Any, Any, int]:
    """A shard's ``(min, max, nulls)`` from its row groups' (``rows``: their row counts):
    unknown (None) when a row group holding values has unknown bounds."""
    if any(lo is None and n < r for (lo, _, n), r in zip(per, rows, strict=True)):
        return None, None, sum(n for _, _, n in per)
    # a row group of NaN only has NaN bounds: the others' bounds are the shard's
    mins = without_nan([m for m, _, _ in per if m is not None])
    maxs = without_nan([m for _, m, _ in per if m is not None])
    return (min(mins) if mins else None, max(maxs) if maxs else None,
            sum(n for _, _, n in per))


def without_nan(bounds: list[Any]) -> list[Any]:
    """``bounds`` without NaN, unless NaN is all there is (min() would keep a leading NaN)."""
    real = [b for b in bounds if not (isinstance(b, float) and math.isnan(b))]
    return real or bounds
