"""Refuse values an integer column would silently truncate (2.5 stored as 2).

``pa.array([2.5], type=pa.int64())`` gives 2 without a word, and so does a float numpy array
put into an integer tensor column. A sample's type is fixed by the first 1,024 samples (or by
``schema=``, or by the version appended to), so a float arriving later would lose its
fraction silently. Arrow's own safe cast (the table path) refuses such values; these checks
give the sample path the same rule: a float is accepted in an integer column only when it is
a whole number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.errors import SchemaError, shown

__all__ = ["check_whole_numbers"]


def _is_float_type(k: type) -> bool:
    return issubclass(k, float | np.floating)


def _integer_target(t: pa.DataType) -> bool:
    if pa.types.is_integer(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _integer_target(t.value_type)
    return False


def _lossy(v: Any) -> bool:
    """Whether ``v`` (a scalar, an array or a list of them) holds a float with a fraction."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind != "f":
            return v.dtype.kind == "O" and any(_lossy(x) for x in v.reshape(-1).tolist())
        return bool(np.any(np.isfinite(v) & (v != np.trunc(v))))
    if isinstance(v, list | tuple):
        kinds = set(map(type, v))  # one C-level pass: lists of ints stop here
        if kinds <= {int, bool, type(None)}:
            return False
        return any(_lossy(x) for x in v)
    return _is_float_type(type(v)) and not float(v).is_integer() and np.isfinite(float(v))


def check_whole_numbers(rows: Sequence[tuple[str, Mapping[str, Any]]], field: pa.Field,
                        values: Sequence[Any]) -> None:
    """Raise SchemaError naming the first sample whose value for integer ``field`` is a float
    with a fraction. Costs one C-level pass over the value types when there is none."""
    if not _integer_target(field.type):
        return
    if pa.types.is_integer(field.type) and not any(map(_is_float_type, set(map(type, values)))):
        return
    for (key, _), v in zip(rows, values, strict=True):
        if v is not None and _lossy(v):
            raise SchemaError(
                f"sample {key!r}, column {field.name!r}: value {shown(v)} has a fraction, but "
                f"the column holds {field.type}; storing it would drop the fraction. Round "
                "it yourself, or commit the column as floats (schema=, or a new dataset)"
            )

