"""Operators that turn each input chunk into one output chunk: map, map_batches, filter,
flat_map (scan: :mod:`dload_arrow.pipeline.scan`; select, which keeps columns:
:mod:`dload_arrow.pipeline.columns`).

Their node state is the child's state (plus the accumulator for ``scan``): a chunk out is a
pure function of a chunk in, so a cursor on the child is a cursor on the output. ``map``
and ``map_batches(rows_preserved=True)`` keep positions, so ``shard``/``skip`` pass
through them; ``filter``, ``flat_map`` and ``scan`` do not (positions change, or the past)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.args import check_bool
from dload_arrow.args import kind as kind_of
from dload_arrow.errors import ConfigError, SchemaError, mark_user_error, shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import (
    Chunk,
    as_record_batch,
    chunk_items,
    chunk_len,
    chunk_slice,
)
from dload_arrow.pipeline.node import CHILD, OFFSET, HeldError, Node, State, noted, stop_error
from dload_arrow.pipeline.views import filter_rows

__all__ = ["FilterPipe", "FlatMapPipe", "MapBatchesPipe", "MapPipe"]


class _ChunkNode(Node):
    """One chunk in, one chunk out; state = the child's."""

    #: True when apply() turns its input into Python items anyway (map).
    items_in = False
    #: The user's function, for errors: ``map(f)``.
    what = "a pipeline function"
    #: True when apply() may raise :class:`_Partial` (it calls a function item by item).
    partial = False

    def __init__(self, child: Node, one_to_one: bool) -> None:
        self.child = child
        self.cheap_skip = one_to_one and child.cheap_skip
        self._drop = 0  # input items of the next chunk already done (see next())
        self._held = HeldError()

    def prefer_items(self) -> None:
        if self.items_in:
            self.child.prefer_items()

    def start_ahead(self) -> None:
        self.child.start_ahead()

    def reset(self, state: State | None = None) -> None:
        self.child.reset(None if state is None else state[CHILD])
        self._drop = 0 if state is None else int(state.get(OFFSET, 0))
        self._held.error = None

    def get_state(self) -> State:
        state: State = {CHILD: self.child.get_state()}
        if self._drop:
            state[OFFSET] = self._drop
        return state

    def next(self) -> Chunk:
        self._held.raise_pending()
        drop = self._drop
        before = self.child.get_state() if self.partial else None
        chunk = self.child.next()
        while drop and drop >= chunk_len(chunk):  # re-read, cut shorter (row_bytes.py)
            drop -= chunk_len(chunk)
            before = self.child.get_state() if self.partial else None
            chunk = self.child.next()
        if self._drop:
            self._drop = 0
            chunk = chunk_slice(chunk, drop, chunk_len(chunk))
        try:
            return self.apply(chunk)
        except StopIteration as e:  # the user's function: not the end of the stream
            raise stop_error(self.what) from e
        except _Partial as p:
            part = p
        # The function failed at an item: the items before it go out, then the error. The
        # state points at that item (the chunk re-read, the done items dropped), so a resume,
        # or the next call, runs it again instead of losing the rest of the chunk.
        self.child.reset(before)
        self._drop = drop + part.done
        error = mark_user_error(part.error)
        if isinstance(error, StopIteration):
            error = stop_error(self.what)
            error.__cause__ = part.error
        self._held.hold(error, chunk_len(part.out))
        return part.out

    def skip(self, n: int) -> int:
        drop, self._drop, self._held.error = self._drop, 0, None
        return max(0, self.child.skip(drop + n) - drop)

    def close(self) -> None:
        self.child.close()

    def apply(self, chunk: Chunk) -> Chunk:
        raise NotImplementedError


class _Partial(Exception):
    """apply() failed at input item ``done`` of its chunk; ``out`` is the items before's."""

    def __init__(self, out: Chunk, done: int, error: Exception) -> None:
        super().__init__(error)
        self.out, self.done, self.error = out, done, error


def _each(fn: Callable[[Any], Any], chunk: Chunk, user: Any = None) -> list[Any]:
    """``[fn(x) for x in items]``; when fn raises, :class:`_Partial` with the results so far
    (its note names ``user``, the user's function ``fn`` wraps, if given)."""
    out: list[Any] = []
    add, x = out.append, None
    try:
        for x in chunk_items(chunk):
            add(fn(x))
    except Exception as e:
        raise _Partial(out, len(out), noted(e, fn if user is None else user, x)) from e
    return out


class _FnNode(_ChunkNode):
    def __init__(self, child: Node, fn: Callable[[Chunk], Chunk], one_to_one: bool,
                 what: str, partial: bool = False) -> None:
        super().__init__(child, one_to_one)
        self.fn, self.what, self.partial = fn, what, partial

    def apply(self, chunk: Chunk) -> Chunk:
        return self.fn(chunk)


class _OnePipe(Pipeline):
    """A pipeline with one child and a function parameter."""

    def __init__(self, child: Pipeline, fn: Any) -> None:
        allowed = pc.Expression if self.op == "filter" else ()
        if not callable(fn) and not isinstance(fn, allowed):
            hint = "" if not isinstance(fn, str) else (
                " (a condition as text? use ds.where(...) on the dataset, or a function such "
                "as lambda s: s['label'] == 3)" if self.op == "filter" else
                " (pass a function, such as a lambda or a def, not text)")
            raise TypeError(f"{self.op}() takes a function of an item, got "
                            f"{type(fn).__name__} {fn!r}{hint}")
        super().__init__(child)
        self.fn = fn

    @property
    def child(self) -> Pipeline:
        return self._children[0]

    def _params(self) -> dict[str, Any]:
        return {"fn": self.fn}

    @property
    def what(self) -> str:
        """``map(f)``: the operator and its function, for errors."""
        return f"{self.op}({_name(self.fn)})"


class MapPipe(_OnePipe):
    op = "map"

    def _length(self) -> int | None:
        return self.child._length()

    def _build(self, epoch: int) -> Node:
        fn = self.fn
        node = _FnNode(self.child._build(epoch), lambda c: _each(fn, c), True, self.what, True)
        node.items_in = True
        return node

    def _push_shard(self, index: int, count: int, block: int) -> Pipeline | None:
        from dload_arrow.pipeline.shard import shard  # below a map: it runs on own items only

        return MapPipe(shard(self.child, index, count, block), self.fn)


class MapBatchesPipe(_OnePipe):
    op = "map_batches"

    def __init__(self, child: Pipeline, fn: Any, rows_preserved: bool) -> None:
        super().__init__(child, fn)
        self.rows_preserved = check_bool("map_batches", "rows_preserved", rows_preserved)

    def _params(self) -> dict[str, Any]:
        return {"fn": self.fn, "rows_preserved": self.rows_preserved}

    def _length(self) -> int | None:
        return self.child._length() if self.rows_preserved else None

    def _build(self, epoch: int) -> Node:
        fn, keep = self.fn, self.rows_preserved

        def apply(chunk: Chunk) -> Chunk:
            if not isinstance(chunk, pa.RecordBatch) and not len(chunk):
                return chunk  # no items (a filter kept none): no columns to give fn
            batch = as_record_batch(chunk) if not isinstance(chunk, pa.RecordBatch) else chunk
            try:
                out = as_record_batch(fn(batch))
            except Exception as e:  # no row of the batch done: the state stays before it
                raise _Partial([], 0, e) from e
            if keep and out.num_rows != batch.num_rows:
                raise ConfigError(
                    f"map_batches({_name(fn)}, rows_preserved=True) returned {out.num_rows} "
                    f"rows for {batch.num_rows}; return one row per row or drop rows_preserved"
                )
            return out

        return _FnNode(self.child._build(epoch), apply, keep, self.what, True)

    def _push_shard(self, index: int, count: int, block: int) -> Pipeline | None:
        if not self.rows_preserved:
            return None
        from dload_arrow.pipeline.shard import shard

        return MapBatchesPipe(shard(self.child, index, count, block), self.fn, True)


class FilterPipe(_OnePipe):
    op = "filter"

    def _schema(self) -> pa.Schema | None:
        return self.child.schema  # the rows it keeps, as they were

    def _build(self, epoch: int) -> Node:
        pred = self.fn

        def apply(chunk: Chunk) -> Chunk:
            if isinstance(pred, pc.Expression):
                batch = chunk if isinstance(chunk, pa.RecordBatch) else as_record_batch(chunk)
                try:
                    return filter_rows(batch, pred)  # (view columns too)
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                    raise SchemaError(
                        f"filter({pred}) does not apply to the rows, which have columns "
                        f"{batch.schema.names}: {str(e).splitlines()[0]}; fix the expression"
                    ) from e
            try:
                keep = _each(pred, chunk)
            except _Partial as p:
                p.out = _kept(chunk_slice(chunk, 0, p.done), p.out)
                raise
            return _kept(chunk, keep)

        return _FnNode(self.child._build(epoch), apply, False, self.what, True)


class FlatMapPipe(_OnePipe):
    op = "flat_map"

    def _build(self, epoch: int) -> Node:
        fn = self.fn

        def apply(chunk: Chunk) -> Chunk:
            try:
                return [y for ys in _each(lambda x: list(_iterable(fn, x)), chunk, fn) for y in ys]
            except _Partial as p:
                p.out = [y for ys in p.out for y in ys]
                raise

        return _FnNode(self.child._build(epoch), apply, False, self.what, True)


def _kept(chunk: Chunk, keep: list[Any]) -> Chunk:
    """The items of ``chunk`` whose ``keep`` value is true."""
    if isinstance(chunk, pa.RecordBatch):
        return filter_rows(chunk, np.fromiter(map(bool, keep), bool, len(keep)))
    return [x for x, k in zip(chunk, keep, strict=True) if k]


def _iterable(fn: Any, x: Any) -> Iterator[Any]:
    """An iterator over ``fn(x)`` for flat_map; TypeError naming what fn gave if it is none."""
    got = fn(x)
    try:
        return iter(got)
    except TypeError as e:
        raise TypeError(f"flat_map({_name(fn)}) must return an iterable of items (a list, "
                        f"tuple or generator), got {_got(got)} for item {shown(x)}") from e


def _got(value: Any) -> str:
    """``an int 1`` (or ``None``): what a function returned, for a message."""
    return "None" if value is None else f"{kind_of(value)} {shown(value)}"


def _name(fn: Any) -> str:
    try:  # an object's __getattr__ may raise anything (a proxy not connected yet)
        return str(getattr(fn, "__qualname__", type(fn).__name__))
    except Exception:
        return type(fn).__name__
