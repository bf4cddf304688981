"""Operators that decide which items pass and when: repeat, take and skip. The buffered
shuffle of non-dataset streams is in :mod:`dload_arrow.pipeline.buffer_shuffle`, consumer
sharding in :mod:`dload_arrow.pipeline.shard`."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.check import budget_share, sharing_budget
from dload_arrow.pipeline.chunks import Chunk, chunk_len
from dload_arrow.pipeline.node import (
    CHILD,
    CURSOR,
    DONE,
    POSITION,
    ItemCursor,
    Node,
    State,
    check_count,
)

__all__ = ["RepeatPipe", "SkipPipe", "TakePipe"]

PASS = "pass"
LEFT = "left"
_GOT, _EMPTY = "pass_gave", "empty_passes"  # an endless repeat's count of empty passes


class RepeatPipe(Pipeline):
    op = "repeat"

    def __init__(self, child: Pipeline, times: int | None) -> None:
        times = None if times is None else check_count("repeat", "times", times)  # None: forever
        super().__init__(child)
        self.times = times

    def _params(self) -> dict[str, Any]:
        return {"times": self.times}

    @property
    def finite(self) -> bool:
        return self.times is not None and self._children[0].finite

    @property
    def endless(self) -> bool:
        # repeat() of a stream of unknown length counts as endless (mix(...).repeat() and
        # ds.filter(f).repeat() stream to every rank); it ends only after two empty passes in
        # a row, and then torch fills the missing positions with a warning (cursor.py)
        child = self._children[0]
        if child.endless:
            return self.times != 0  # its first pass never ends
        return self.times is None and child._length() != 0

    def _length(self) -> int | None:
        n = self._children[0]._length()
        if self.times == 0:
            return 0
        return None if n is None or self.times is None else n * self.times

    def _schema(self) -> pa.Schema | None:
        return self._children[0].schema

    def _build(self, epoch: int) -> Node:
        return _RepeatNode(self._children[0], epoch, self.times)


class _RepeatNode(Node):
    """Pass ``r`` of outer epoch ``e`` runs the child at inner epoch ``e * stride + r``."""

    def __init__(self, pipe: Pipeline, epoch: int, times: int | None) -> None:
        self.pipe, self.epoch, self.times = pipe, epoch, times
        self.stride = times if times is not None else 1 << 32
        self.cheap_skip = False
        self.r = 0
        self._got, self._empty = False, 0  # see next()
        self.child: Node | None = None
        self.share = budget_share()  # its passes are built later, with the same share

    def _open(self, state: State | None) -> None:
        if self.child is not None:
            self.child.close()
        self._got = False  # this pass has given an item
        # after the last pass (a state saved once it ended) the child is that pass's, at its
        # end: pass `times` would be the next outer epoch's first (QA fuzz55)
        r = self.r if self.times is None else min(self.r, max(self.times - 1, 0))
        with sharing_budget(self.share):
            self.child = self.pipe._build(self.epoch * self.stride + r)
        self.child.reset(state)

    def reset(self, state: State | None = None) -> None:
        self.r = 0 if state is None else int(state[PASS])
        self._open(None if state is None else state[CHILD])
        # whether this pass gave an item, and the empty passes before it: a pass cut after its
        # last item is not empty (states saved before these keys count it empty, as they did)
        self._got = bool(state.get(_GOT, False)) if state is not None else False
        self._empty = int(state.get(_EMPTY, 0)) if state is not None else 0

    def get_state(self) -> State:
        assert self.child is not None
        state = {PASS: self.r, CHILD: self.child.get_state()}
        if self.times is None:  # only an endless repeat ends on empty passes
            state.update({_GOT: self._got, _EMPTY: self._empty})
        return state

    def next(self) -> Chunk:
        while self.times is None or self.r < self.times:
            assert self.child is not None
            try:
                chunk = self.child.next()
            except StopIteration:
                # A pass that gave no item is empty however many empty chunks (a filter's) it
                # returned; only an endless repeat of empty passes ends (it would spin forever).
                self._empty = 0 if self._got else self._empty + 1
                if self.times is None and self._empty > 1:
                    break
                self.r += 1
                if self.times is not None and self.r >= self.times:
                    break
                self._open(None)
                continue
            if chunk_len(chunk):
                self._got, self._empty = True, 0
            return chunk
        raise StopIteration

    def close(self) -> None:
        if self.child is not None:
            self.child.close()


class TakePipe(Pipeline):
    op = "take"

    def __init__(self, child: Pipeline, n: int) -> None:
        n = check_count("take", "n", n)
        super().__init__(child)
        self.n = n

    def _params(self) -> dict[str, Any]:
        return {"n": self.n}

    @property
    def finite(self) -> bool:
        return True

    @property
    def endless(self) -> bool:
        return False

    def _length(self) -> int | None:
        child = self._children[0]
        if child.endless:
            return self.n  # an endless input always has n items to give
        n = child._length()
        return None if n is None else min(n, self.n)

    def _schema(self) -> pa.Schema | None:
        return self._children[0].schema

    def _build(self, epoch: int) -> Node:
        return _TakeNode(self._children[0]._build(epoch), self.n)


class _TakeNode(Node):
    def __init__(self, child: Node, n: int) -> None:
        self.cursor, self.n, self.k = ItemCursor(child), n, 0
        self.cheap_skip = child.cheap_skip

    def reset(self, state: State | None = None) -> None:
        self.k = 0 if state is None else int(state[POSITION])
        self.cursor.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        return {POSITION: self.k, CURSOR: self.cursor.get_state()}

    def next(self) -> Chunk:
        if self.k >= self.n:
            raise StopIteration
        got = self.cursor.take(self.n - self.k)
        if got is None:
            raise StopIteration
        self.k += chunk_len(got)
        return got

    def skip(self, n: int) -> int:
        got = self.cursor.skip(min(n, self.n - self.k))
        self.k += got
        return got

    def prefer_items(self) -> None:
        self.cursor.child.prefer_items()

    def start_ahead(self) -> None:
        self.cursor.child.start_ahead()

    def close(self) -> None:
        self.cursor.close()


class SkipPipe(Pipeline):
    op = "skip"

    def __init__(self, child: Pipeline, n: int) -> None:
        n = check_count("skip", "n", n)
        super().__init__(child)
        self.n = n

    def _params(self) -> dict[str, Any]:
        return {"n": self.n}

    def _length(self) -> int | None:
        n = self._children[0]._length()
        return None if n is None else max(0, n - self.n)

    def _schema(self) -> pa.Schema | None:
        return self._children[0].schema

    def _build(self, epoch: int) -> Node:
        return _SkipNode(self._children[0]._build(epoch), self.n)


class _SkipNode(Node):
    def __init__(self, child: Node, n: int) -> None:
        self.cursor, self.n, self.left = ItemCursor(child), n, n  # left: still to skip
        self.cheap_skip = child.cheap_skip

    def reset(self, state: State | None = None) -> None:
        self.left = self.n if state is None else 0 if state[DONE] else int(
            state.get(LEFT, self.n))
        self.cursor.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        state: State = {DONE: not self.left, CURSOR: self.cursor.get_state()}
        if self.left and self.left != self.n:
            state[LEFT] = self.left
        return state

    def _skip_head(self) -> None:
        if self.left:
            read = self.cursor.count
            try:
                self.cursor.skip(self.left)
            except Exception:  # the input failed at an item: what it read before is skipped
                self.left -= self.cursor.count - read
                raise
            self.left = 0

    def next(self) -> Chunk:
        self._skip_head()
        got = self.cursor.take_chunk()
        if got is None:
            raise StopIteration
        return got

    def skip(self, n: int) -> int:
        self._skip_head()
        return self.cursor.skip(n)

    def prefer_items(self) -> None:
        self.cursor.child.prefer_items()

    def start_ahead(self) -> None:
        self.cursor.child.start_ahead()

    def close(self) -> None:
        self.cursor.close()
