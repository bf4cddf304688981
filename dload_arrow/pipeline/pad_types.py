"""The number types of ``pad_collate``'s arrays: a ``dtype=`` read, a value a type would
change found, Python ints past int64 kept exact, the rows' own type when none is known, and
a pad that does not fit refused (QA llm59, review59b/c/e/f)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError

__all__ = ["NUMBERS", "as_dtype", "changed", "check_fit", "exact", "found"]

NUMBERS = "biuf"


def as_dtype(d: Any) -> np.dtype:
    """A ``dtype=`` as a numpy number type (ConfigError naming it otherwise)."""
    try:
        dtype = np.dtype(d)
    except TypeError as e:
        raise ConfigError(f"pad_collate(dtype={d!r}): not a numpy dtype ({e})") from e
    if dtype.kind not in NUMBERS:
        raise ConfigError(f"pad_collate(dtype={d!r}): give a number type (int32, float32...)")
    return dtype


def changed(src: np.ndarray, out: np.ndarray) -> bool:
    """Whether making ``src`` into ``out``'s type changed a value (floats narrowed to floats:
    only by overflowing; anything else: exactly; 1.5 is no int, 2**24 + 1 no float32)."""
    with np.errstate(all="ignore"):
        if out.dtype.kind == "f" and src.dtype.kind == "f":
            return bool((np.isinf(out) & np.isfinite(src.astype(np.float64))).any())
        return not np.array_equal(out.astype(np.float64), src.astype(np.float64),
                                  equal_nan=True) if src.dtype.kind in "fiub" else False


def exact(name: str, cell: Any, a: np.ndarray) -> np.ndarray:
    """A row of Python numbers that numpy made float64: as it was when that lost nothing,
    uint64 when it holds big non-negative ints only, else refused."""
    flat = list(_flat(cell))
    if not any(type(x) is int and abs(x) > 2**53 for x in flat):
        return a
    if all(type(x) is int and 0 <= x < 2**64 for x in flat):
        return np.asarray(cell, dtype=np.uint64)
    raise ConfigError(f"pad_collate: column {name!r} holds integers beyond 2**53 that float64 "
                      "would round; make the rows one type, or give dtype=")


def _flat(v: Any) -> Any:
    for x in v:
        if isinstance(x, list | tuple):
            yield from _flat(x)
        else:
            yield x


def found(name: str, filled: list[np.ndarray], pad: int | float) -> np.dtype:
    """The rows' own common type (never widened by the pad value)."""
    if not filled:
        return np.asarray(pad).dtype
    dtype = np.result_type(*(a.dtype for a in filled))
    if dtype.kind == "f" and all(a.dtype.kind in "iu" and a.min() >= 0 for a in filled):
        return np.dtype(np.uint64)  # uint64 ids beside small ones: numpy's pick is float64
    if dtype.kind == "f" and any(a.dtype.kind in "iu" and int(np.abs(a).max()) > 2**53
                                 for a in filled):  # (uint64 beside floats)
        raise ConfigError(f"pad_collate: column {name!r} holds integers beyond 2**53 beside "
                          "floats; float64 would round them: make the rows one type, or "
                          "give dtype=")
    return dtype


def check_fit(name: str, dtype: np.dtype, pad: int | float) -> None:
    if isinstance(pad, float) and math.isnan(pad):
        if dtype.kind != "f":
            raise ConfigError(f"pad_collate(pad_value=nan) does not fit column {name!r} of "
                              f"type {dtype}; NaN pads floats only")
        return
    with np.errstate(all="ignore"):
        cast = np.asarray(pad).astype(dtype)
        fits = bool(np.isfinite(cast)) if dtype.kind == "f" and math.isfinite(pad) else (
            cast.item() == pad)  # (a float pad rounds to the column's float type: 0.1)
    if not fits:
        raise ConfigError(f"pad_collate(pad_value={pad!r}) does not fit column {name!r} of "
                          f"type {dtype}; give a pad value that type holds")
