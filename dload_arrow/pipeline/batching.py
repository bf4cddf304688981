"""``batch`` and ``unbatch``, and the default collate.

``batch(size)`` reads ``size`` items through an item cursor and collates them; its state is
that cursor, so a checkpoint between batches restores exactly. ``shard``/``skip`` pass below
``batch`` as positions in samples (``block * size``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import MAX_COUNT, check_bool
from dload_arrow.errors import ConfigError, shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk, chunk_items, chunk_len, column_values, concat_chunks
from dload_arrow.pipeline.collate_checks import check_one_kind, check_same_columns, warn_ragged
from dload_arrow.pipeline.common_schema import refuse_unlike_columns
from dload_arrow.pipeline.integers import integer
from dload_arrow.pipeline.node import CURSOR, ItemCursor, Node, State, stop_error

__all__ = ["BatchPipe", "UnbatchPipe", "check_one_kind", "check_same_columns",
           "default_collate"]


def default_collate(items: Chunk, schema: pa.Schema | None = None, *,
                    padded: Collection[str] = ()) -> Any:
    """A batch as a dict of column -> numpy array (numbers, tensors) or list (the rest).

    A RecordBatch collates column by column without leaving Arrow until the numpy step; a
    list of dicts is stacked key by key (numbers in their column's type when ``schema``, the
    rows' schema, gives one); torch tensors of one shape (a decode map's) stack into one
    tensor; any other list stays a list (arrays of several shapes: warned once per column,
    but for the ``padded`` ones, which a collate such as ``pad_collate`` pads next).
    """
    if isinstance(items, pa.RecordBatch):
        return {f.name: column_values(items, i) for i, f in enumerate(items.schema)}
    padded = (padded,) if isinstance(padded, str) else padded  # (not its substrings)
    if items and all(isinstance(x, Mapping) for x in items):
        check_same_columns(items)
        types = {} if schema is None else {f.name: f.type for f in schema}
        return {k: _stack([x[k] for x in items], _numpy_dtype(types.get(k)), k, k not in padded)
                for k in items[0]}
    return list(items)


def _numpy_dtype(typ: pa.DataType | None) -> np.dtype | None:
    if typ is None or not (pa.types.is_integer(typ) or pa.types.is_floating(typ)
                           or pa.types.is_boolean(typ)):
        return None
    return np.dtype(typ.to_pandas_dtype())


def _stack(values: list[Any], dtype: np.dtype | None = None, name: str = "",
           ragged: bool = True) -> Any:
    first = values[0]
    if isinstance(first, np.ndarray) and all(isinstance(v, np.ndarray) for v in values):
        if all(v.shape == first.shape for v in values):
            return np.stack(values)
        if ragged:  # (pad_collate pads them: no warning, QA docs62)
            warn_ragged(name, values)
        return values
    if (torch := sys.modules.get("torch")) is not None and isinstance(first, torch.Tensor) \
            and all(isinstance(v, torch.Tensor) for v in values):  # a decode map's tensors
        if all(v.shape == first.shape for v in values):  # (subclasses: torchvision's Image)
            try:
                return torch.stack(values)  # dtypes promoted, as np.stack does
            except (RuntimeError, TypeError):  # (uint16 beside uint8: torch promotes not)
                if len({v.dtype for v in values}) == 1 or len(
                        {(v.device, v.layout) for v in values}) > 1:
                    raise  # another device, a sparse tensor: torch's own words
                if ragged:
                    warn_ragged(name, values, shapes=False)
                return values
        if ragged:  # (pad_collate pads them: no warning, QA docs62)
            warn_ragged(name, values)
        return values
    if isinstance(first, (bool, int, float, np.number, np.bool_)) and all(
        isinstance(v, (bool, int, float, np.number, np.bool_)) for v in values
    ):
        check_one_kind(name, values)  # booleans beside numbers
        if dtype is not None:  # a dataset column's values (after unbatch): its own type
            return np.asarray(values, dtype=dtype)
        arr = np.asarray(values)
        if arr.dtype.kind in "fO":  # numpy would round (or box) Python ints beyond int64
            ints = [v for v in values if type(v) is int]
            if len(ints) == len(values) and all(0 <= v < 2**64 for v in ints):
                return np.asarray(values, dtype=np.uint64)
            if any(not -(2**53) <= v <= 2**53 for v in ints):
                return values  # no numpy dtype holds them exactly: Python ints, as given
        if arr.dtype.char == "Q":  # ints >= 2**63: numpy's ulonglong, as np.uint64 (Arrow's)
            arr = arr.view(np.uint64)
        return arr
    check_one_kind(name, values)
    return values


class BatchPipe(Pipeline):
    op = "batch"

    def __init__(self, child: Pipeline, size: int, drop_last: bool, collate: Any) -> None:
        n = integer(size)
        if n is None or not 1 <= n <= MAX_COUNT:
            raise ConfigError(f"batch size must be a positive int, got {size!r} (the most is "
                              f"{MAX_COUNT:,})")
        check_bool("batch", "drop_last", drop_last)
        if collate is not None and not callable(collate):
            raise TypeError(f"batch: collate must be a function of a list of items, got "
                            f"{collate!r}")
        if isinstance(collate, type) and getattr(collate, "takes_schema", False):
            raise ConfigError(f"batch(collate={collate.__name__}): that is the class; pass "
                              f"an instance: collate={collate.__name__}()")
        super().__init__(child)
        self.size, self.drop_last, self.collate = n, drop_last, collate

    def _params(self) -> dict[str, Any]:
        return {"size": self.size, "drop_last": self.drop_last, "collate": self.collate}

    def _length(self) -> int | None:
        n = self._children[0]._length()
        if n is None:
            return None
        return n // self.size if self.drop_last else -(-n // self.size)

    def _build(self, epoch: int) -> Node:
        collate = self.collate
        if collate is None:  # rows that lost their numpy types (unbatched) get them back
            refuse_unlike_columns(self._children[0], self.size)
            schema = self._children[0].schema
            collate = default_collate if schema is None else functools.partial(
                default_collate, schema=schema)
        elif getattr(collate, "takes_schema", False):  # pad_collate: the rows' stored types
            refuse_unlike_columns(self._children[0], self.size, type(collate).__name__)
            collate = functools.partial(collate, schema=self._children[0].schema)
        return _BatchNode(self._children[0]._build(epoch), self.size, self.drop_last, collate,
                          self.collate is None or getattr(self.collate, "takes_schema", False))

    def _push_shard(self, index: int, count: int, block: int) -> Pipeline | None:
        if count * block * self.size > MAX_COUNT:  # positions below are int64 rows
            raise ConfigError(
                f"shard(count={count}, block={block}) of batch(size={self.size:,}): below the "
                f"batch the shard counts rows, blocks of block * size, so count * block * size "
                f"must be at most {MAX_COUNT:,} (int64); pass a smaller batch size")
        from dload_arrow.pipeline.shard import shard  # a batch of own rows: collated once

        return BatchPipe(shard(self._children[0], index, count, block * self.size), self.size,
                         self.drop_last, self.collate)


class _BatchNode(Node):
    def __init__(self, child: Node, size: int, drop_last: bool,
                 collate: Callable[[Chunk], Any], default: bool) -> None:
        self.cursor = ItemCursor(child)
        self.size, self.drop_last, self.collate = size, drop_last, collate
        self.default = default  # the default collate (pad_collate too): a RecordBatch as is
        self.cheap_skip = child.cheap_skip
        self._redo: State | None = None  # the cursor before a batch that failed

    def reset(self, state: State | None = None) -> None:
        self._redo = None
        self.cursor.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        return {CURSOR: self.cursor.get_state() if self._redo is None else self._redo}

    def start_ahead(self) -> None:
        self.cursor.child.start_ahead()

    def _rewind(self) -> None:
        if self._redo is not None:
            self.cursor.reset(self._redo)
            self._redo = None

    def next(self) -> Chunk:
        # A batch that fails (its map, its collate) leaves the state at its start, not past
        # the items it had taken: a resume, or the next call, makes the batch again.
        self._rewind()
        start = self.cursor.get_state()
        try:
            return self._make()
        except StopIteration:
            raise
        except Exception:
            self._redo = start
            raise

    def _make(self) -> Chunk:
        parts: list[Chunk] = []
        have = 0
        while have < self.size:
            got = self.cursor.take(self.size - have)
            if got is None:
                break
            parts.append(got)
            have += chunk_len(got)
        if have == 0 or (have < self.size and self.drop_last):
            raise StopIteration
        chunk = concat_chunks(parts)
        if not self.default:  # a user's collate gets the items (dicts)
            chunk = chunk_items(chunk)
        try:
            return [self.collate(chunk)]
        except StopIteration as e:  # the user's collate: not the end of the stream
            name = getattr(self.collate, "__qualname__", type(self.collate).__name__)
            raise stop_error(f"batch(collate={name})") from e

    def skip(self, n: int) -> int:
        self._rewind()
        got = self.cursor.skip(n * self.size)
        full, rest = divmod(got, self.size)
        return full + (1 if rest and not self.drop_last else 0)

    def close(self) -> None:
        self.cursor.close()


class UnbatchPipe(Pipeline):
    op = "unbatch"

    def _schema(self) -> pa.Schema | None:
        # Unbatching what the default collate made of rows gives those rows back: the torch
        # adapter then types them by their columns (an int8 column stays int8, not int64).
        child = self._children[0]
        if isinstance(child, BatchPipe) and child.collate is None:
            return child._children[0].schema
        return None

    def _build(self, epoch: int) -> Node:
        return _UnbatchNode(self._children[0]._build(epoch))


def _split(batch: Any) -> list[Any]:
    if isinstance(batch, pa.RecordBatch):
        return chunk_items(batch)
    if isinstance(batch, Mapping):
        keys = list(batch)
        try:
            n = len(batch[keys[0]]) if keys else 0
            for k in keys[1:]:
                if len(batch[k]) != n:
                    raise IndexError(f"column {k!r} has {len(batch[k])} values, {keys[0]!r} {n}")
            return [{k: _item(batch[k][i]) for k in keys} for i in range(n)]
        except (TypeError, IndexError, KeyError) as e:
            raise TypeError(
                f"unbatch: an item is a dict but not a batch (dict of equally long columns): "
                f"{shown(batch, 80)} ({e}); unbatch() splits what batch() made"
            ) from e
    if isinstance(batch, (str, bytes)) or not hasattr(batch, "__len__") or \
            not hasattr(batch, "__getitem__"):
        raise TypeError(f"unbatch: an item is not a batch (a dict of columns, a sequence or a "
                        f"RecordBatch) but {type(batch).__name__} {shown(batch, 80)}; unbatch() "
                        "splits what batch() made")
    return list(batch)  # a list, tuple, numpy array or tensor: its first dimension


def _item(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


class _UnbatchNode(Node):
    def __init__(self, child: Node) -> None:
        self.child = child

    def reset(self, state: State | None = None) -> None:
        self.child.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        return {CURSOR: self.child.get_state()}

    def next(self) -> Chunk:
        return [x for b in chunk_items(self.child.next()) for x in _split(b)]

    def close(self) -> None:
        self.child.close()
