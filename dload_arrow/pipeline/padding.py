"""``pad_collate``: a batch of variable-length sequences (token ids, audio frames) as one padded
array per column, with each row's length, for ``batch(n, collate=pad_collate())``.

The default collate leaves such a column a list of lists (no array holds rows of several
lengths); every team porting from MosaicML streaming, LitData or WebDataset wrote the same few
lines to pad them (QA migrate59). The torch adapter turns the arrays into tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.batching import default_collate

__all__ = ["pad_collate"]


def _is_sequence(v: Any) -> bool:
    """A row a column pads: a list, a tuple or an array (along its first axis)."""
    return isinstance(v, list | tuple) or (isinstance(v, np.ndarray) and v.ndim >= 1)


def _numeric_sequences(cells: list[Any]) -> bool:
    """Whether a column's cells are sequences of numbers (None too), one at least non-empty:
    what ``columns=None`` pads (a list of strings stays as the default collate gives it)."""
    if not all(c is None or _is_sequence(c) for c in cells):
        return False
    try:
        arrays = [np.asarray(c) for c in cells if c is not None and len(c)]
    except ValueError:  # ragged inner rows: not this collate's
        return False
    return bool(arrays) and all(a.dtype.kind in "biuf" for a in arrays)


def _stored(schema: pa.Schema | None, name: str) -> np.dtype | None:
    """The numpy type of a stored list column's numbers (``list<int32>``: int32), if any."""
    if schema is None or name not in schema.names:
        return None
    t = schema.field(name).type
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return np.dtype(t.to_pandas_dtype())
    return None


class pad_collate:  # (lower case: used as a function, batch(n, collate=pad_collate()))
    """Collate a batch, padding columns of variable-length sequences into 2-D arrays.

    Args:
        pad_value: what fills the positions past a row's end (default 0).
        columns: the columns to pad (default: every column whose values are sequences of
            numbers: lists, tuples or 1-D arrays). A null cell is a row of length 0.
        max_length: cut longer rows to this length (default: the batch's longest row).
        lengths: add ``{column}_length`` (int64: each row's length, after any cut).
        mask: add ``{column}_mask`` (bool: True where a row has a value), e.g. an attention
            mask.

    Example:
        >>> pipe = ds.pipeline().shuffle(seed=0).batch(32, collate=pad_collate(pad_value=0))
        ... # doctest: +SKIP
    """

    def __init__(self, pad_value: int | float = 0, columns: Sequence[str] | None = None,
                 max_length: int | None = None, lengths: bool = True,
                 mask: bool = False) -> None:
        if isinstance(pad_value, bool) or not isinstance(pad_value, int | float):
            raise ConfigError(f"pad_collate(pad_value={pad_value!r}): give a number")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(
                max_length, int) or max_length < 1):
            raise ConfigError(f"pad_collate(max_length={max_length!r}): give a whole number "
                              "of 1 or more, or None for the longest row of each batch")
        if isinstance(columns, str):
            columns = [columns]
        self.pad_value, self.max_length = pad_value, max_length
        self.columns = None if columns is None else tuple(columns)
        self.lengths, self.mask = lengths, mask

    def __repr__(self) -> str:
        return (f"pad_collate(pad_value={self.pad_value!r}, columns={self.columns!r}, "
                f"max_length={self.max_length!r}, lengths={self.lengths}, mask={self.mask})")

    takes_schema = True  # batch() passes the rows' schema: stored types are kept

    def __call__(self, items: Any, schema: pa.Schema | None = None) -> Any:
        rows = items.to_pylist() if isinstance(items, pa.RecordBatch) else items
        if not rows or not all(isinstance(x, Mapping) for x in rows):
            return default_collate(items, schema)
        out = default_collate(items, schema)
        names = self.columns if self.columns is not None else [
            c for c in rows[0] if (_stored(schema, c) is not None and _is_list(schema, c))
            or _numeric_sequences([x.get(c) for x in rows])]  # stored lists: every batch
        for c in names:
            if c not in rows[0]:
                raise ConfigError(f"pad_collate: no column {c!r} in the batch (its columns: "
                                  f"{', '.join(map(str, rows[0]))})")
            cells = [x.get(c) for x in rows]
            for cell in cells:
                if cell is not None and not _is_sequence(cell):
                    raise ConfigError(f"pad_collate: column {c!r} holds {type(cell).__name__} "
                                      "values, not sequences; leave it out of columns=")
            out.update(self._pad(c, cells, _stored(schema, c)))
        return out

    def _pad(self, name: str, cells: list[Any], stored: np.dtype | None
             ) -> dict[str, np.ndarray]:
        try:
            arrays = [np.asarray([] if c is None else c) for c in cells]
        except ValueError as e:  # [[1, 2], [3]]: inner rows of two lengths
            raise ConfigError(f"pad_collate: column {name!r} holds rows whose inner lengths "
                              f"differ ({e}); only the first axis (the length) is padded") from e
        filled = [a for a in arrays if a.size]
        dtype = _dtype(name, filled, stored, self.pad_value)
        inner = {a.shape[1:] for a in filled}  # rows of frames (T, F) pad along T
        if len(inner) > 1:
            raise ConfigError(f"pad_collate: column {name!r} holds rows of shapes "
                              f"{sorted(inner)} after their first axis; only the first axis "
                              "(the length) is padded")
        rest = inner.pop() if inner else ()
        n = [min(len(a), self.max_length or len(a)) for a in arrays]
        width = self.max_length or max(n, default=0)
        padded = np.full((len(arrays), width, *rest), self.pad_value, dtype=dtype)
        for i, a in enumerate(arrays):
            if n[i]:  # (an empty row of a (T, F) column is shaped (0,): nothing to copy)
                padded[i, :n[i]] = a[:n[i]]
        got = {name: padded}
        if self.lengths:
            got[f"{name}_length"] = np.asarray(n, dtype=np.int64)
        if self.mask:
            got[f"{name}_mask"] = np.arange(width)[None, :] < np.asarray(n)[:, None]
        return got


def _is_list(schema: pa.Schema | None, name: str) -> bool:
    t = None if schema is None or name not in schema.names else schema.field(name).type
    return t is not None and (pa.types.is_list(t) or pa.types.is_large_list(t))


def _dtype(name: str, filled: list[np.ndarray], stored: np.dtype | None,
           pad: int | float) -> np.dtype:
    """The padded array's type: the column's stored type (``list<int32>``: int32), else its
    rows' common type; never widened by the pad value, which must fit it (QA llm59: int32
    tokens became int64 and float32 frames float64, which a float32 model refuses)."""
    found = np.result_type(*(a.dtype for a in filled)) if filled else None
    if found is not None and found.kind not in "biuf":
        raise ConfigError(f"pad_collate: column {name!r} holds {found} values; only numbers "
                          "are padded: leave it out of columns=")
    if stored is not None and (found is None or np.can_cast(found, stored, "same_kind")):
        dtype = stored
    else:
        dtype = found if found is not None else np.asarray(pad).dtype
    if dtype.kind == "f" and any(a.dtype.kind in "iu" and a.size and int(np.abs(a).max())
                                 > 2**53 for a in filled):  # (uint64 beside floats)
        raise ConfigError(f"pad_collate: column {name!r} holds integers beyond 2**53 beside "
                          "floats; float64 would round them: make the rows one type")
    if dtype.kind == "b":
        dtype = np.dtype(np.int64) if pad not in (0, 1) else dtype
    if np.asarray(pad).astype(dtype).item() != pad:
        raise ConfigError(f"pad_collate(pad_value={pad!r}) does not fit column {name!r} of "
                          f"type {dtype}; give a pad value that type holds")
    return dtype
