"""Arrow arrays built from numpy buffers, without ``pa.array``.

``pa.array`` imports pandas on its first call in a process whenever pandas is installed (it
checks whether its argument is a pandas object): 0.3-0.45 s and about 50 MB here, paid by
the first shuffled batch of every process and every DataLoader worker, while the read path
never needs pandas. The reading and pipeline layers build their index, mask and probe arrays
with these helpers instead, and read numeric columns into numpy with :func:`numpy_values`
(``Array.to_numpy`` imports pandas too). tests/test_no_pandas.py runs the read paths in a
fresh process and checks that pandas stays unimported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["binary_array", "bool_array", "int64_array", "numpy_values", "scalar",
           "string_array"]


def int64_array(values: Any) -> pa.Array:
    """An int64 Arrow array (no nulls) over ``values``, a copy only if they are not int64."""
    data = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def bool_array(mask: Any) -> pa.Array:
    """A boolean Arrow array (no nulls) from a numpy-like mask."""
    bits = np.asarray(mask, dtype=bool).reshape(-1)
    packed = np.packbits(bits, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(bits), [None, pa.py_buffer(packed)])


def binary_array(values: Sequence[bytes]) -> pa.Array:
    """A binary Arrow array (no nulls) of ``values``."""
    lengths = np.fromiter((len(v) for v in values), np.int64, len(values))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    data = pa.py_buffer(b"".join(values))
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets), data])


def string_array(values: Sequence[str]) -> pa.Array:
    """A string Arrow array (no nulls) of ``values`` (UTF-8 encoded here, so always valid)."""
    return binary_array([v.encode() for v in values]).view(pa.string())


def scalar(value: Any) -> pa.Scalar:
    """``value`` (None, bool, int, float, str or bytes) as an Arrow scalar of the type
    ``pa.scalar`` infers (None: a null boolean); other values go through ``pa.scalar``."""
    if value is None:
        return pa.nulls(1, pa.bool_())[0]
    if isinstance(value, bool):
        return bool_array([value])[0]
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return int64_array([value])[0]
    if isinstance(value, float):
        data = np.asarray([value], np.float64)
        return pa.Array.from_buffers(pa.float64(), 1, [None, pa.py_buffer(data)])[0]
    if isinstance(value, str):
        return string_array([value])[0]
    if isinstance(value, bytes):
        return binary_array([value])[0]
    return pa.scalar(value)


def numpy_values(arr: pa.Array) -> np.ndarray:
    """The values of a numeric or boolean array as numpy.

    Integers and floats without nulls are a read-only view of the Arrow buffer (zero-copy);
    booleans are unpacked (one copy). Anything else goes through ``Array.to_numpy``.
    """
    t = arr.type
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        dtype = np.dtype(t.to_pandas_dtype())
        return np.frombuffer(arr.buffers()[1], dtype, len(arr), arr.offset * dtype.itemsize)
    if arr.null_count == 0 and pa.types.is_boolean(t):
        bits = np.frombuffer(arr.buffers()[1], np.uint8)
        end = arr.offset + len(arr)
        return np.unpackbits(bits, count=end, bitorder="little")[arr.offset:].astype(bool)
    out: np.ndarray = arr.to_numpy(zero_copy_only=False)
    return out
