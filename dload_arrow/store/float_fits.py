"""Numbers into float columns of samples: a value beyond a narrow float's range (stored as
inf or 0), and an int the float cannot hold exactly (2049 into float16 became 2048.0; numpy's
uint64 2**64-1 into float64 became -1.0: QA dtypes66, review66b), refused by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.store.pair_checks import int_rounded

__all__ = ["leaf_type", "overflow_refusal", "overflows"]

Refusal = Callable[[Any], str | None]


def leaf_type(t: pa.DataType) -> pa.DataType:
    """The value type of a (nested) list type, or ``t``."""
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    return t


_EXACT = 2**53  # the ints float64 holds exactly, all of them


def overflows(v: Any, dtype: np.dtype) -> bool:
    """Whether ``v`` (a number, an array or a list of them) holds a finite number that is
    infinite as ``dtype`` (a float narrower than float64), or a nonzero one that is 0."""
    try:
        a = np.asarray(v, dtype=np.float64)  # None in a list becomes NaN: not counted
    except (TypeError, ValueError, OverflowError):
        return False  # not numbers (or beyond float64): pa.array refuses them itself
    with np.errstate(over="ignore", under="ignore"):
        b = a.astype(dtype)
        return bool(np.any(np.isfinite(a) & (~np.isfinite(b) | ((b == 0) & (a != 0)))))


def overflow_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]
                      ) -> Refusal | None:
    leaf = leaf_type(t)
    narrow = pa.types.is_floating(leaf) and leaf.bit_width < 64
    ints = (t != leaf and narrow) or any(issubclass(k, int | np.integer) for k in kinds)
    if not pa.types.is_floating(leaf) or not (narrow or ints) or (not narrow and all(
            type(v) is not int or -_EXACT <= v <= _EXACT for v in values) and not any(
            issubclass(k, np.integer) for k in kinds)):  # (float64: ints past 2**53 only)
        return None
    dtype = np.dtype(leaf.to_pandas_dtype())
    if t == leaf and not (narrow and overflows(values, dtype)) and not (
            ints and any(int_rounded(v, dtype) for v in values)):
        return None  # one vectorised pass over a column of numbers
    info = np.finfo(dtype)
    why = (f"is beyond the range of {dtype.name} (magnitudes {float(info.smallest_subnormal):g} "
           f"to {float(info.max):g}) and would be stored as inf or 0; scale it, or give the "
           "column a wider float type (schema=, or a new dataset)")
    rounded = (f"is an int that {dtype.name} cannot hold exactly (a table of it is refused "
               "too); give the column a wider float type (schema=, or a new dataset)")
    return lambda v: why if narrow and overflows(v, dtype) else rounded if (
        ints and int_rounded(v, dtype)) else None


