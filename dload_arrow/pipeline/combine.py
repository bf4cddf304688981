"""Operators over several pipelines in order or side by side: concat and zip_with.

The routed combinators (mix, choice, select) live in :mod:`dload_arrow.pipeline.router`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from dload_arrow.args import check_callable, kind
from dload_arrow.errors import ConfigError, shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.check import budget_share, sharing_budget
from dload_arrow.pipeline.chunks import Chunk, chunk_items
from dload_arrow.pipeline.common_schema import cast_to, common_schema
from dload_arrow.pipeline.node import (
    CHILD,
    CHILDREN,
    HeldError,
    ItemCursor,
    Node,
    State,
    stop_error,
)

__all__ = ["ConcatPipe", "Input", "Opens", "ZipPipe", "concat", "zip_with"]

INDEX = "index"


class Opens(Protocol):
    """A Dataset or a ``where()`` view: what opens its own pipeline, taken by the
    combinators beside pipelines (as ``x.pipeline()``)."""

    def pipeline(self) -> Pipeline: ...


Input = Pipeline | Opens
"""What ``concat``, ``zip_with``, ``mix``, ``choice`` and ``select`` combine."""


# Steps whose items are their input's kind (rows stay rows, batches stay batches); a map's
# function decides (QA review61: batch(4).map(pack) yields rows again).
_KEEPS_KIND = frozenset({"filter", "shuffle_buffer", "repeat", "take", "skip", "shard",
                         "select_columns"})


def yields_batches(pipe: Pipeline) -> bool | None:
    """Whether ``pipe``'s items are ``batch()``es (True) or rows (False); None when a step's
    function decides (``map``, ``flat_map``, ``scan``, ``from_iterable``)."""
    while pipe.op in _KEEPS_KIND:
        pipe = pipe._children[0]
    if pipe.op in ("batch", "unbatch", "dataset"):
        return pipe.op == "batch"
    if pipe.op in ("concat", "mix", "choice", "select"):
        kinds = {yields_batches(c) for c in pipe._children[: getattr(pipe, "n", None)]}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def _refuse_batches_beside_rows(pipes: list[Pipeline], what: str) -> None:
    """A mix of a ``batch()``ed input and a row input gives a stream of batches and rows
    (QA finetune61: a batch above it held a list of 4 keys beside one key, silently)."""
    kinds = [yields_batches(p) for p in pipes]
    if True in kinds and False in kinds:
        b, r = kinds.index(True), kinds.index(False)
        raise ConfigError(
            f"{what}: input {b} yields batches (it ends in batch()) and input {r} yields rows; "
            f"its items would be both: {what} the inputs first and batch() the result, or "
            "batch() every input")


def _check_pipes(pipes: Sequence[Any], what: str) -> list[Pipeline]:
    if isinstance(pipes, Pipeline) or callable(getattr(pipes, "pipeline", None)):
        raise TypeError(f"{what} takes a list of pipelines as its first argument, got one "
                        f"{type(pipes).__name__}: write {what}([a, b], ...)")
    if isinstance(pipes, str | bytes | Mapping) or not isinstance(pipes, Iterable):
        raise TypeError(f"{what}(pipes={shown(pipes)}): pipes must be a list of pipelines "
                        f"(or datasets), got {kind(pipes)}")
    pipes = list(pipes)
    if not pipes:
        raise ConfigError(f"{what} needs at least one pipeline")
    for i, p in enumerate(pipes):
        if not isinstance(p, Pipeline):
            pipe = getattr(p, "pipeline", None)
            if callable(pipe):  # a Dataset
                pipes[i] = pipe()
                continue
            raise TypeError(f"{what}: input {i} is a {type(p).__name__}, not a Pipeline")
    if what != "zip_with":  # side by side, a batch beside a row is fine
        _refuse_batches_beside_rows(pipes, what)
    return pipes


def concat(pipes: Sequence[Input]) -> Pipeline:
    """The items of each pipeline in turn."""
    return ConcatPipe(*_check_pipes(pipes, "concat"))


def zip_with(pipes: Sequence[Input], fn: Callable[..., Any] | None = None) -> Pipeline:
    """Items side by side: ``fn(a, b, ...)`` (a tuple when ``fn`` is None); ends with the
    shortest input."""
    pipes = _check_pipes(pipes, "zip_with")
    return ZipPipe(pipes, None if fn is None else check_callable("zip_with", "fn", fn))


class ConcatPipe(Pipeline):
    op = "concat"

    def _length(self) -> int | None:
        ns = [c._length() for c in self._children]
        return None if any(n is None for n in ns) else sum(n for n in ns if n is not None)

    def _schema(self) -> pa.Schema | None:
        return common_schema(self._children)

    def _build(self, epoch: int) -> Node:
        return _ConcatNode(self._children, epoch)


class _ConcatNode(Node):
    def __init__(self, pipes: Sequence[Pipeline], epoch: int) -> None:
        self.pipes, self.epoch = pipes, epoch
        self.schema = common_schema(pipes)
        self.i = 0
        self.child: Node | None = None
        self.share = budget_share()  # its sources are built later, with the same share

    def _open(self, state: State | None) -> None:
        if self.child is not None:
            self.child.close()
        with sharing_budget(self.share):
            self.child = cast_to(self.pipes[self.i], self.pipes[self.i]._build(self.epoch),
                                self.schema) if self.i < len(self.pipes) else None
        if self.child is not None:
            self.child.reset(state)

    def reset(self, state: State | None = None) -> None:
        self.i = 0 if state is None else int(state[INDEX])
        self._open(None if state is None else state[CHILD])

    def get_state(self) -> State:
        return {INDEX: self.i, CHILD: None if self.child is None else self.child.get_state()}

    def next(self) -> Chunk:
        while self.child is not None:
            try:
                return self.child.next()
            except StopIteration:
                self.i += 1
                self._open(None)
        raise StopIteration

    def close(self) -> None:
        if self.child is not None:
            self.child.close()


class ZipPipe(Pipeline):
    op = "zip_with"

    def __init__(self, pipes: Sequence[Pipeline], fn: Any) -> None:
        super().__init__(*pipes)
        self.fn = fn

    def _params(self) -> dict[str, Any]:
        return {"fn": self.fn}

    @property
    def finite(self) -> bool:
        return any(c.finite for c in self._children)

    @property
    def endless(self) -> bool:
        return all(c.endless for c in self._children)

    def _length(self) -> int | None:
        ns = [None if c.endless else c._length() for c in self._children]
        known = [n for n in ns if n is not None]
        # the shortest input ends the zip; one of unknown length (not endless) may be shorter
        if any(n is None and not c.endless for n, c in zip(ns, self._children, strict=True)):
            return None
        return min(known) if known else None

    def _build(self, epoch: int) -> Node:
        return _ZipNode([c._build(epoch) for c in self._children], self.fn)


class _ZipNode(Node):
    def __init__(self, children: list[Node], fn: Any) -> None:
        self.cursors = [ItemCursor(c) for c in children]
        self.fn = fn
        self._started = False
        self._held = HeldError()

    def reset(self, state: State | None = None) -> None:
        self._started, self._held.error = False, None
        for i, c in enumerate(self.cursors):
            c.reset(None if state is None else state[CHILDREN][i])

    def get_state(self) -> State:
        return {CHILDREN: [c.get_state() for c in self.cursors]}

    def next(self) -> Chunk:
        self._held.raise_pending()
        if not self._started:  # the inputs' first reads overlap
            self._started = True
            for c in self.cursors:
                c.child.start_ahead()
        n = min(c.peek_len() for c in self.cursors)
        if n == 0:
            raise StopIteration
        cols = [chunk_items(c.take(n) or []) for c in self.cursors]  # n items each
        if self.fn is None:
            return list(zip(*cols, strict=True))
        fn = self.fn
        out: list[Any] = []
        add = out.append
        try:
            for xs in zip(*cols, strict=True):
                add(fn(*xs))
        except Exception as e:
            # fn failed at an item: the ones before go out, then the error; the cursors
            # give back the items from the failing one on, so it is zipped again next.
            for c in self.cursors:
                c.untake(n - len(out))
            error: Exception = e
            if isinstance(e, StopIteration):  # the user's function: not the end of the stream
                name = getattr(fn, "__qualname__", type(fn).__name__)
                error = stop_error(f"zip_with({name})")
                error.__cause__ = e
            self._held.hold(error, len(out))
        return out

    def close(self) -> None:
        for c in self.cursors:
            c.close()
