"""The buffered shuffle of non-dataset streams (``pipe.shuffle(buffer, seed)`` on items that
are not dataset rows): consecutive windows of ``buffer`` items, each permuted."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk, chunk_len, chunk_take, concat_chunks
from dload_arrow.pipeline.integers import integer
from dload_arrow.pipeline.node import CURSOR, ItemCursor, Node, State
from dload_arrow.plan.seeds import check_seed, rng

__all__ = ["BufferShufflePipe", "ops_above"]

WINDOW = "window"


class BufferShufflePipe(Pipeline):
    """Shuffle a stream in consecutive windows of ``buffer`` items: window ``w`` (items
    ``[w*buffer, (w+1)*buffer)``) comes out permuted by a permutation drawn from ``(seed,
    epoch, w)``. The state is the input cursor at the window's start: restoring re-reads that
    window, never a saved buffer."""

    op = "shuffle_buffer"

    def __init__(self, child: Pipeline, buffer: int, seed: int) -> None:
        seed = check_seed(seed)
        n = integer(buffer)
        if n is None:
            raise TypeError(f"shuffle buffer is a number of items (an int), got {buffer!r}")
        if n < 1:
            raise ConfigError(f"shuffle buffer must be >= 1 item, got {n}")
        super().__init__(child)
        self.buffer, self.seed = n, seed

    def _params(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "seed": self.seed}

    def _length(self) -> int | None:
        return self._children[0]._length()

    def _schema(self) -> pa.Schema | None:
        return self._children[0].schema

    def _build(self, epoch: int) -> Node:
        return _BufferShuffleNode(self._children[0]._build(epoch), self.buffer, self.seed, epoch)


class _BufferShuffleNode(Node):
    def __init__(self, child: Node, buffer: int, seed: int, epoch: int) -> None:
        self.cursor = ItemCursor(child)
        self.buffer, self.seed, self.epoch = buffer, seed, epoch
        self.w = 0
        # A window whose input failed at an item (a user's function): its items so far and
        # the cursor at its start, which stays the state until the window is complete.
        self._parts: list[Chunk] = []
        self._start: State | None = None

    def reset(self, state: State | None = None) -> None:
        self.w = 0 if state is None else int(state[WINDOW])
        self._parts, self._start = [], None
        self.cursor.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        cursor = self._start if self._start is not None else self.cursor.get_state()
        return {WINDOW: self.w, CURSOR: cursor}

    def next(self) -> Chunk:
        parts, self._parts = self._parts, []
        start, self._start = self._start, None
        if start is None:
            start = self.cursor.get_state()
        have = sum(chunk_len(c) for c in parts)
        try:
            while have < self.buffer:
                got = self.cursor.take(self.buffer - have)
                if got is None:
                    break
                parts.append(got)
                have += chunk_len(got)
        except Exception:
            # Going on completes this window from the failing item (nothing read twice); a
            # resume re-reads it from its start.
            self._parts, self._start = parts, start
            raise
        if not have:
            raise StopIteration
        window = concat_chunks(parts)
        try:
            perm = self._order(window, have)
        except Exception:  # (bucket: an item without a length) the window stays to read
            self._parts, self._start = parts, start
            raise
        self.w += 1
        return chunk_take(window, perm)

    def _order(self, window: Chunk, have: int) -> Any:
        """The window's items' order: a permutation drawn from ``(seed, epoch, w)``."""
        return rng(self.seed, self.epoch, "buffer", self.w).permutation(have)

    def prefer_items(self) -> None:
        self.cursor.child.prefer_items()

    def start_ahead(self) -> None:
        self.cursor.child.start_ahead()

    def close(self) -> None:
        self.cursor.close()


def ops_above(pipe: Any) -> str:
    """``shard()/map()``: the operators between the source and ``pipe`` (for a message)."""
    ops: list[str] = []
    p = pipe
    while len(p._children) == 1:
        ops.append(f"{p.op}()")
        p = p._children[0]
    return "/".join(reversed(ops)) if ops and p.op == "dataset" else "map/filter/batch"
