"""What the collates check of a batch's items: the same columns in every item, one kind of
value (booleans, numbers, text, bytes) in each column."""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dload_arrow.errors import SchemaError, shown, user_stacklevel
from dload_arrow.pipeline.common_schema import same_columns_fix

__all__ = ["check_one_kind", "check_same_columns", "warn_once", "warn_ragged"]

_WARNED: set[str] = set()  # columns warned of as ragged, once per process


def check_same_columns(items: Sequence[Mapping[str, Any]], by: str | None = None) -> None:
    """Raise SchemaError naming the first item whose columns differ from the first item's
    (``by``: the collate that needs them alike, when it is not the default)."""
    keys = items[0].keys()
    for i, x in enumerate(items):
        if x.keys() != keys:
            raise SchemaError(
                f"batch: item {i} has columns {sorted(x)} but item 0 has {sorted(keys)}; "
                "items of one batch need the same columns: select() or map() the inputs of "
                "a mix/concat/choice to the same columns" + same_columns_fix(by))


_NUMBER = (bool, int, float, np.number, np.bool_)


def _kind_of(t: type) -> str | None:
    if issubclass(t, (bool, np.bool_)):  # True beside 3 would collate as 1 (QA mix56)
        return "bool"
    if issubclass(t, _NUMBER):
        return "number"
    return "text" if issubclass(t, str) else "bytes" if issubclass(t, bytes) else None


def check_one_kind(name: str, values: Sequence[Any]) -> None:
    """Raise SchemaError when a batch's column mixes booleans, numbers, text and bytes.

    Such a column (a mix of datasets that type it differently) would collate into a list of
    mixed values that no model input takes; nulls and other values (lists, dicts) pass.
    """
    types = set(map(type, values))  # one C loop: the usual column has one type
    if len(types) == 1 or len({k for t in types if (k := _kind_of(t)) is not None}) < 2:
        return
    first: tuple[int, str] | None = None
    for i, v in enumerate(values):
        k = _kind_of(type(v))
        if k is None:
            continue
        if first is None:
            first = (i, k)
        elif k != first[1]:
            j = first[0]
            raise SchemaError(
                f"batch: column {name!r} holds {type(values[j]).__name__} in item {j} "
                f"({shown(values[j])}) and {type(v).__name__} in item {i} ({shown(v)}); a "
                "batch's column needs one kind of value: map() the inputs of a mix/concat/"
                "choice to one type (int(...) or str(...)), or pass collate=")


def warn_once(name: str, message: str) -> None:
    """Warn ``message`` about column ``name`` once per process (as :func:`warn_ragged`)."""
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(message, stacklevel=_level())


def warn_ragged(name: str, values: Sequence[Any], shapes: bool = True) -> None:
    """Warn, once per column, that a batch keeps arrays (or tensors) of several shapes as a
    list (QA vision62: one grayscale image among RGB ones made its batch alone a list, and
    the model failed at a random step; torch's collate raises there)."""
    if name in _WARNED:
        return
    _WARNED.add(name)
    first = values[0]
    i, odd = next((i, v) for i, v in enumerate(values) if _form(v) != _form(first))
    fix = ("make the shapes equal in the map (resize, crop), or pad variable lengths: "
           "batch(n, collate=dl.pad_collate())" if shapes else
           "cast them to one dtype in the map (torch stacks no uint16 beside other types)")
    warnings.warn(
        f"batch(): column {name!r} holds arrays of different {'shapes' if shapes else 'dtypes'} "
        f"in one batch ({_form(first)} at item 0, {_form(odd)} at item {i}), so that batch "
        f"gives it as a list of arrays while other batches may give one array; {fix} (warned "
        "once per column)", stacklevel=_level())


def _form(v: Any) -> str:
    shape = tuple(getattr(v, "shape", ()))
    return f"{shape} {v.dtype}" if shape != () or hasattr(v, "dtype") else repr(v)


def _level() -> int:
    """The user's frame, past torch's DataLoader when a collate runs as its ``collate_fn``."""
    torch = sys.modules.get("torch")
    path = getattr(torch, "__file__", None)
    if not isinstance(path, str) or _in_worker():  # a DataLoader worker has no user frame:
        return user_stacklevel() - 1  # torch's call, then
    level = user_stacklevel(os.path.dirname(path) + os.sep)  # (counted from here)
    if sys._getframe(level - 1).f_code.co_filename == threading.__file__:  # nor a thread
        level = user_stacklevel()  # running the loader (to_device's, QA review63)
    return level - 1


def _in_worker() -> bool:
    from torch.utils.data import get_worker_info

    return get_worker_info() is not None
