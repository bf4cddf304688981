"""Python and numpy values (what samples hold) to torch tensors.

A value takes its column's torch dtype when the schema is known; without one, a Python
``float`` is float64 (a double, as torch's default collate makes it, never rounded to
float32), a Python ``int`` int64, a numpy scalar or array keeps its own dtype.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from dload_arrow.errors import SchemaError, shown
from dload_arrow.store.frames import frame_of

__all__ = ["check_exact_doubles", "frames_type", "from_numpy", "torch_dtype",
           "value_to_torch"]

_INT64 = range(-(2**63), 2**63)
_UINT64 = range(2**64)


def from_numpy(arr: np.ndarray) -> torch.Tensor:
    """A tensor over ``arr``'s memory (read-only when ``arr`` is)."""
    # numpy has two uint64 types, ulong ('L', np.uint64 here, what Arrow gives) and ulonglong
    # ('Q', what np.asarray makes of Python ints >= 2**63); from_numpy takes only the first.
    if arr.dtype.char == "Q" and arr.dtype.isnative:
        arr = arr.view(np.uint64)
    if any(step < 0 for step in arr.strides):  # np.fliplr's view: torch takes no such strides
        arr = np.ascontiguousarray(arr)
    # Arrow buffers are immutable, so numpy views over them are read-only; torch warns about
    # that on every from_numpy. The tensor is documented as read-only, so silence only that.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(arr)


_DTYPES = {
    "bool": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "uint16": torch.uint16,
    "uint32": torch.uint32, "uint64": torch.uint64, "halffloat": torch.float16,
    "float": torch.float32, "double": torch.float64,
}


def torch_dtype(typ: pa.DataType) -> torch.dtype | None:
    """The torch dtype of a numeric column, or of a list column's numbers; None otherwise."""
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        typ = typ.value_type
    return _DTYPES.get(str(typ))


def frames_type(typ: pa.DataType) -> tuple[tuple[int, ...], torch.dtype] | None:
    """``(shape, dtype)`` of a list of fixed-size lists of numbers (an episode's frames:
    ``(-1, 48)`` and uint8 for ``list<fixed_size_list<uint8, 48>>``), whose cell is one
    tensor; None for other types (QA rl66: its cells were nested lists, which a collate_fn
    widened to int64 and float64)."""
    got = frame_of(typ)
    dtype = None if got is None else _DTYPES.get(str(got[1]))
    return None if got is None or dtype is None else ((-1, *got[0]), dtype)


def value_to_torch(value: Any, shape: tuple[int, ...] | None,
                   dtype: torch.dtype | None = None, name: str = "") -> Any:
    """``value`` (of column ``name``) as a tensor (of ``shape`` and ``dtype`` when given)
    where it is numeric; a list of arrays as a list of tensors; anything else unchanged.

    Raises:
        SchemaError: a list of Python ints that neither int64 nor uint64 holds.
    """
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            t = from_numpy(value)
            return t.reshape(shape) if shape is not None else t
        return value
    if isinstance(value, float) and dtype is None:  # as torch's default_collate: float64
        return torch.tensor(value, dtype=torch.float64)
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        if dtype is None and type(value) is int and not -(2**63) <= value < 2**63:
            return value  # no default torch dtype holds it: it stays an int (a list, batched)
        return torch.tensor(value, dtype=dtype)
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        if dtype is None:  # np.float32 stays float32, np.int8 int8, and so on
            return from_numpy(np.asarray(value)).clone()
        return torch.tensor(value.item(), dtype=dtype)
    # A list column is a tensor in every row (an empty one too) when its type is known.
    if isinstance(value, (list, tuple)) and (value or dtype is not None) and all(
        isinstance(v, (bool, int, float)) for v in value
    ):
        if dtype is None:
            dtype = _list_dtype(value, name)
        t = torch.tensor(value, dtype=dtype)
        return t.reshape(shape) if shape is not None else t
    if shape is not None and dtype is not None and isinstance(value, list) and value and (
            isinstance(value[0], list)):  # frames (frames_type): one tensor, if no null
        try:
            arr = np.asarray(value, dtype=torch.empty(0, dtype=dtype).numpy().dtype)
        except (ValueError, TypeError, OverflowError):
            return value
        if arr.dtype.kind == "f" and np.isnan(arr).any() and any(  # a null is no NaN: a
                x is None for row in value if row is not None for x in row):  # list (66c)
            return value
        return from_numpy(arr).reshape(shape)
    # A batch's tensor column with nulls stays a list: its arrays become tensors all the
    # same (as torch's default_convert makes them in a DataLoader, so both paths agree).
    if isinstance(value, list) and any(isinstance(v, np.ndarray) for v in value) and all(
        v is None or isinstance(v, np.ndarray) for v in value
    ):
        return [None if v is None else value_to_torch(v, None) for v in value]
    return value


def _list_dtype(values: list[Any] | tuple[Any, ...], name: str) -> torch.dtype | None:
    """The dtype of a list of Python numbers without a column type: float64 when it holds a
    float (Python floats are doubles; torch.tensor would say float32), uint64 for ints from
    2**63 up (as ``batch()`` stacks them), else torch's own choice (int64 or bool)."""
    if any(isinstance(v, float) for v in values):
        check_exact_doubles(values, name)
        return torch.float64
    big = [v for v in values if v not in _INT64]
    if not big:
        return None
    if all(v in _UINT64 for v in values):
        return torch.uint64
    bad = next((v for v in big if v not in _UINT64), None)
    why = (f"{shown(bad)} is outside int64 and uint64" if bad is not None else
           f"{shown(big[0])} needs uint64, and {min(values)} is negative")
    raise SchemaError(
        f"column {name!r}: the list of ints {shown(values)} fits no torch integer dtype "
        f"({why}); make it floats or strings in a map (float(v), str(v)), or pass "
        "to_tensors=False to keep Python ints"
    )


def check_exact_doubles(values: Sequence[Any], name: str) -> None:
    """Refuse ints among floats that a float64 tensor would round (past 2**53): ``batch()``
    keeps such a mix as a list of Python numbers because no one dtype holds it exactly.

    Raises:
        SchemaError: naming the column, the value and the ways out.
    """
    bad = next((v for v in values if type(v) is int and abs(v) > 2**53 and not _exact(v)), None)
    if bad is not None:
        raise SchemaError(
            f"column {name!r}: the int {bad} among floats would be rounded in a float64 tensor "
            f"(to {_rounded(bad)}): its items hold ints and floats (an int column in one input "
            "of a mix/concat and a float one in another, or a map() returning both); map() it "
            "to one type (float(v) or int(v)) first, or pass to_tensors=False to keep Python "
            "numbers")


def _exact(v: int) -> bool:
    try:
        return int(float(v)) == v
    except OverflowError:
        return False


def _rounded(v: int) -> str:
    try:
        return repr(float(v))
    except OverflowError:
        return "inf"
