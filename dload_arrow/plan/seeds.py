"""Seeds: the one place where seeds are combined.

Every random decision in dload_arrow (shard order, row-group order, window permutations, mix
choices, random streams) draws from a generator made here from the user's seed plus named
parts (the epoch, a window index, a purpose string). Combining goes through BLAKE2b of a
canonical encoding, so the result is the same on every machine, Python version and process:
never time, pid or ``hash()`` (which is salted per process for strings).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import numpy as np

__all__ = ["check_seed", "derive_seed", "rng"]

_MASK64 = (1 << 64) - 1


def _encode(part: int | str | bytes) -> bytes:
    if isinstance(part, bool):
        part = int(part)
    if isinstance(part, int):
        if -(2**127) <= part < 2**127:  # 128 bits, as always: every such seed keeps its order
            return b"i" + struct.pack("<QQ", (part >> 64) & _MASK64, part & _MASK64)
        # beyond: all its bits (taken modulo 2**128, 2**128 was seed 0 and -1 was 2**128 - 1)
        data = part.to_bytes((part.bit_length() + 8) // 8, "little", signed=True)
        return b"I" + struct.pack("<Q", len(data)) + data
    if isinstance(part, str):
        data = part.encode()
        return b"s" + struct.pack("<Q", len(data)) + data
    if isinstance(part, bytes):
        return b"b" + struct.pack("<Q", len(part)) + part
    raise TypeError(
        f"seed parts must be int, str or bytes, got {type(part).__name__} ({part!r}); "
        "pass the seed as an integer"
    )


def derive_seed(*parts: int | str | bytes) -> int:
    """A 64-bit seed from any sequence of ints/strings, stable across processes and machines.

    Args:
        parts: the user's seed followed by what this draw is for (epoch, window, purpose).

    Returns:
        An integer in ``[0, 2**64)``; equal parts give equal seeds, any change gives another.
    """
    h = hashlib.blake2b(digest_size=8, person=b"dload-seed")
    for p in parts:
        h.update(_encode(p))
    return int.from_bytes(h.digest(), "little")


def check_seed(seed: Any) -> int:
    """``seed`` as an int; TypeError for anything else (None, a str, a bool, a float)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an int (any value; the same seed gives the same order), "
                        f"got {seed!r}")
    return int(seed)


def rng(*parts: int | str | bytes) -> np.random.Generator:
    """A numpy Generator (PCG64) seeded with :func:`derive_seed` of ``parts``."""
    return np.random.Generator(np.random.PCG64(derive_seed(*parts)))
