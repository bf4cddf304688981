"""``pad_collate``: a batch of variable-length sequences (token ids, audio frames) as one padded
array per column, with each row's length, for ``batch(n, collate=pad_collate())``: the
default collate leaves such a column a list of lists (QA migrate59). Torch makes the arrays
tensors. Types: an explicit ``dtype=``, else the column's stored type (``batch()`` passes the
rows' schema: ``list<int32>`` tokens stay int32, ``list<uint64>`` ids exact, float32 frames
float32), else the rows' own arrays' type; the pad never widens it and must fit it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import check_bool
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.batching import default_collate
from dload_arrow.pipeline.chunks import chunk_items, column_values
from dload_arrow.pipeline.collate_checks import check_same_columns, warn_once
from dload_arrow.pipeline.pad_holes import as_lists, fill_nulls
from dload_arrow.pipeline.pad_picks import (
    is_sequence,
    padded_by_default,
    rows_of_rows,
    stored_type,
)
from dload_arrow.pipeline.pad_torch import as_tensors, torch_rows
from dload_arrow.pipeline.pad_types import NUMBERS, as_dtype, changed, check_fit, exact, found

__all__ = ["pad_collate"]


class _Ragged(ConfigError):
    """Rows that make no one array (a column named in ``columns=`` is refused for it)."""


class pad_collate:  # (lower case: used as a function, batch(n, collate=pad_collate()))
    """Collate a batch, padding columns of variable-length sequences into arrays.

    Args:
        pad_value: what fills the positions past a row's end (default 0; a float column
            may take NaN); it must fit the padded type. A dict gives it per column, 0 for
            the others: ``{"labels": -100}``.
        columns: the columns to pad (default: the stored list columns of numbers, in every
            batch, and where no stored type says (after a map) any column whose values are
            sequences of numbers: lists, tuples, arrays along their first axis; a fixed-size
            stored column, an embedding, is left as ``batch()`` gives it). A null cell is a
            row of length 0.
        max_length: cut longer rows to this length (default: the batch's longest row).
        lengths: add ``{column}_length`` (int64: each row's length, after any cut).
        mask: add ``{column}_mask`` (bool: True where a row has a value), e.g. an attention
            mask.
        dtype: the padded arrays' type (a numpy dtype or its name, or a dict column ->
            dtype); default: the stored type, else the rows' own (after a ``map`` the stored
            type is unknown: say it here, e.g. ``dtype="float32"``).

    Example:
        >>> pipe = ds.pipeline().shuffle(seed=0).batch(32, collate=pad_collate(pad_value=0))
        ... # doctest: +SKIP
    """

    takes_schema = True  # batch() passes the rows' schema: stored types are kept

    def __init__(self, pad_value: int | float | Mapping[str, int | float] = 0,
                 columns: Sequence[str] | None = None, max_length: int | None = None,
                 lengths: bool = True, mask: bool = False, dtype: Any = None) -> None:
        pads = pad_value if isinstance(pad_value, Mapping) else {"": pad_value}
        for c, v in pads.items():
            if not isinstance(c, str) or isinstance(v, bool) or not isinstance(v, int | float):
                raise ConfigError(f"pad_collate(pad_value={pad_value!r}): give a number (a bool "
                                  "column pads with 1 for True, 0 for False), or a dict of "
                                  "column name -> number ({'labels': -100})")
        for name in ("lengths", "mask"):  # mask="false" from a config file is truthy
            check_bool("pad_collate", name, locals()[name])
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(
                max_length, int) or max_length < 1):
            raise ConfigError(f"pad_collate(max_length={max_length!r}): give a whole number "
                              "of 1 or more, or None for the longest row of each batch")
        if isinstance(columns, str):
            columns = [columns]
        self.pad_value: int | float | dict[str, int | float] = (
            dict(pad_value) if isinstance(pad_value, Mapping) else pad_value)
        self.max_length = max_length
        self.columns = None if columns is None else tuple(columns)
        self.lengths, self.mask = lengths, mask
        self.dtype = {c: as_dtype(d) for c, d in dtype.items()} if isinstance(
            dtype, Mapping) else (None if dtype is None else as_dtype(dtype))

    def __repr__(self) -> str:
        return (f"pad_collate(pad_value={self.pad_value!r}, columns={self.columns!r}, "
                f"max_length={self.max_length!r}, lengths={self.lengths}, mask={self.mask}, "
                f"dtype={self.dtype!r})")

    def __call__(self, items: Any, schema: pa.Schema | None = None) -> Any:
        rows = chunk_items(items)  # (a RecordBatch's rows: tensors as arrays, as batch() has)
        if not rows or not all(isinstance(x, Mapping) for x in rows):
            return default_collate(items, schema)
        check_same_columns(rows, "pad_collate")
        tensors = torch_rows(rows)  # a torch DataLoader's collate_fn: tensors in and out
        if tensors is not None:
            items = rows = tensors
        names = self.columns if self.columns is not None else [
            c for c in rows[0] if self._picked(c, [x.get(c) for x in rows], schema)]
        if isinstance(items, pa.RecordBatch):  # the others as batch() gives them: an
            out = {f.name: [x[f.name] for x in rows] if f.name in names  # embedding (n, 64),
                   else column_values(items, i)  # not lists (QA recsys63)
                   for i, f in enumerate(items.schema)}
        else:
            out = default_collate(items, schema, padded=names)  # (the others warned if ragged)
        if isinstance(self.pad_value, dict) and (odd := set(self.pad_value) - set(rows[0])):
            raise ConfigError(f"pad_collate(pad_value=...) names {sorted(odd)}, not columns "
                              f"of the batch (its columns: {', '.join(map(str, rows[0]))})")
        if isinstance(self.pad_value, dict) and (scalar := sorted(
                c for c in self.pad_value if c in rows[0] and c not in names
                and rows[0][c] is not None and not is_sequence(rows[0][c]))):
            raise ConfigError(f"pad_collate(pad_value=...) names {scalar}, which holds single "
                              "values, not sequences: nothing of it is padded")
        if isinstance(self.pad_value, dict) and self.columns is not None and (
                left := set(self.pad_value) - set(self.columns)):
            raise ConfigError(f"pad_collate(pad_value=...) names {sorted(left)}, which "
                              f"columns={list(self.columns)} leaves out: add it to columns=")
        for c in names:
            if c not in rows[0]:
                raise ConfigError(f"pad_collate: no column {c!r} in the batch (its columns: "
                                  f"{', '.join(map(str, rows[0]))})")
            cells = [x.get(c) for x in rows]
            for cell in cells:
                if cell is not None and not is_sequence(cell):
                    raise ConfigError(f"pad_collate: column {c!r} holds {type(cell).__name__} "
                                      "values, not sequences; leave it out of columns=")
            try:
                out.update(self._pad(c, cells, stored_type(schema, c)))
            except _Ragged as e:  # rows of rows of two widths: lists, named in columns= too
                if self.columns is not None and not rows_of_rows(cells):  # (QA review64i)
                    raise
                self._lists(out, c, cells, str(e))
        for c in rows[0] if self.columns is None else ():  # stored rows of rows of two
            if c not in names and (stored_type(schema, c) or (0, 0))[1] is None:  # widths
                self._lists(out, c, [x.get(c) for x in rows],  # within a row: warned too
                            f"pad_collate: column {c!r} holds rows of rows of two lengths")
        if tensors is not None or _loader_called():  # (torch's DataLoader itself called it:
            import torch  # a batch of null rows holds no tensor, QA review63f)

            return {k: as_tensors(v, torch) for k, v in out.items()}
        return out

    def _lists(self, out: dict[str, Any], name: str, cells: list[Any], why: str) -> None:
        """``name``'s rows of rows that make no one array, given as lists with their keys."""
        warn_once(f"pad_collate:{name}", f"{why}, so that batch gives it as a list (warned "
                  "once per column)")
        out.update(as_lists(name, cells, self.max_length, self.lengths, self.mask))

    def _picked(self, name: str, cells: list[Any], schema: pa.Schema | None) -> bool:
        """Whether ``columns=None`` pads ``name`` in this batch. Where its rows hold no value
        (null items, empty rows) and no stored type says (after a map; a torch DataLoader's
        collate_fn), nothing tells numbers from text: padded only if ``dtype={name: ...}``
        names it (each batch decided alone: resumes, epochs and workers agree)."""
        picked = padded_by_default(cells, schema, name)
        if picked is None:
            return isinstance(self.dtype, dict) and name in self.dtype
        return picked

    def _pad(self, name: str, cells: list[Any],
             stored: tuple[np.dtype, tuple[int, ...] | None, tuple[int, ...]] | None
             ) -> dict[str, np.ndarray]:
        given = self.dtype.get(name) if isinstance(self.dtype, dict) else self.dtype
        pad = self.pad_value.get(name, 0) if isinstance(self.pad_value, dict) else self.pad_value
        want = given if given is not None else (stored[0] if stored else None)
        shape = stored[1] if stored and stored[1] is not None else ()
        # rows of frames: a frame no frame of the batch gives a size to is empty, of the
        # stored rank and fixed sizes ((0,) for list<list<T>>, (0, 3) a level in with 3 fixed)
        empty = tuple(0 if x < 0 else x for x in stored[2]) if stored and not shape else ()
        cells, holes = fill_nulls(cells, shape, empty)
        arrays = [a.reshape(len(a), *empty) if not a.size and a.ndim != 1 + len(empty) and empty
                  else a for a in _arrays(name, cells, want, check=given is not None)]  # ((2, 0):
        # a graph of no edge keeps its shape, QA graphs65)
        filled = [a for a in arrays if a.size]
        dtype = want if want is not None else found(name, filled, pad)
        check_fit(name, dtype, pad)
        inner = {a.shape[1:] for a in arrays if len(a)}  # rows of frames (T, F) pad along T
        if len(inner) > 1:
            raise _Ragged(f"pad_collate: column {name!r} holds rows of shapes "
                              f"{sorted(inner)} after their first axis; only the first axis "
                              "(the length) is padded")
        # no frame in the batch: the stored rank, each inner axis empty (QA review64)
        rest = inner.pop() if inner else shape or empty
        n = [min(len(a), self.max_length or len(a)) for a in arrays]
        width = self.max_length or max(n, default=0)
        padded = np.full((len(arrays), width, *rest), pad, dtype=dtype)
        for i, a in enumerate(arrays):
            if n[i]:  # (an empty row of a (T, F) column is shaped (0,): nothing to copy)
                padded[i, :n[i]] = a[:n[i]]
                if (hole := holes[i]) is not None:  # null items: the pad
                    padded[i, :n[i]][hole[:n[i]]] = pad
        got = {name: padded}
        if self.lengths:
            got[f"{name}_length"] = np.asarray(n, dtype=np.int64)
        if self.mask:
            mask = np.arange(width)[None, :] < np.asarray(n)[:, None]
            for i, hole in enumerate(holes):  # a null item of a row: not a value
                if hole is not None:
                    mask[i, :n[i]] &= ~hole[:n[i]]
            got[f"{name}_mask"] = mask
        return got


def _arrays(name: str, cells: list[Any], want: np.dtype | None, check: bool = False
            ) -> list[np.ndarray]:
    """The rows as arrays, made in ``want`` where it is known (Python ints past int64 stay
    exact in uint64; an array that ``want`` would change is refused, naming the column)."""
    try:
        arrays = [np.asarray([] if c is None else c, dtype=want) for c in cells]
        if want is not None and check:  # (a stored type holds its stored values)
            for c, a in zip(cells, arrays, strict=True):
                if a.size and changed(np.asarray(c), a):
                    raise ValueError(f"{np.asarray(c).dtype} values {want} does not hold")
    except (ValueError, TypeError, OverflowError, RuntimeError) as e:  # [[1, 2], [3]]
        of = "" if want is None else f" of {want}"  # (dtype= given: an error, default or not)
        raise (ConfigError if check and not rows_of_rows(cells) else _Ragged)(
            f"pad_collate: column {name!r} holds a row it cannot make an array{of} from ({e}): "
            "rows of rows of two lengths, None inside a row of rows, values the type does not "
            "hold, or a tensor numpy cannot take (bfloat16, one that requires grad: "
            ".detach().float() it in a map); only the first axis (the length) is padded") from e
    for i, a in enumerate(arrays):
        if a.size and a.dtype.kind not in NUMBERS:
            raise ConfigError(f"pad_collate: column {name!r} holds {a.dtype} values; only "
                              "numbers are padded: leave it out of columns=")
        if want is None and a.dtype.kind == "f" and isinstance(cells[i], list | tuple):
            arrays[i] = exact(name, cells[i], a)  # numpy made Python ints past 2**63 floats
    return arrays


_LOADER = f"{os.sep}torch{os.sep}utils{os.sep}data{os.sep}"


def _loader_called() -> bool:
    """Whether torch's DataLoader called the collate itself (``collate_fn=pad_collate()``):
    its result is tensors then, a batch of null rows too. A user's collate wrapping it gets
    numpy, as anywhere else (QA review63e)."""
    if "torch" not in sys.modules:
        return False
    try:
        frame = sys._getframe(2)  # (this function's caller's caller: whoever called __call__)
    except ValueError:  # no Python frame above (a thread started on it directly)
        return False
    return _LOADER in frame.f_code.co_filename
