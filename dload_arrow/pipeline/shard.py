"""Consumer sharding: one of ``count`` consumers keeps its share of a stream.

``shard(index, count, block)`` keeps items whose ``(position // block) % count == index``,
positions counted in its input. It is pushed down through 1:1 operators (map, select,
map_batches with ``rows_preserved``) and ``batch`` (``block * size``) into dataset sources,
which then plan only their own rows and read only the units holding them. Operators that
change positions stop the push-down (filter, flat_map, scan, unbatch, a buffered shuffle,
mix/concat/zip/choice, a dataset view with a row predicate); there :class:`_ShardNode` reads its
input and keeps its own items, skipping the others cheaply where its input can skip. It sits
right above the operator that stopped it, under the 1:1 operators and batches above: their
functions run on the consumer's own items only (QA llm59: a tokenizing map over a mix ran on
every row in every DataLoader worker and rank, and workers made the epoch slower).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dload_arrow.args import MAX_COUNT, check_count
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk, chunk_len, concat_chunks
from dload_arrow.pipeline.node import CURSOR, POSITION, HeldError, ItemCursor, Node, State
from dload_arrow.plan.orders import own_count

__all__ = ["ShardPipe", "shard"]

_SHARD_CHUNK = 1024


def shard(pipe: Pipeline, index: int, count: int, block: int = 1) -> Pipeline:
    """``pipe.shard(index, count, block)``: pushed down where possible (see module doc)."""
    count = check_count("shard", "count", count, low=1)
    block = check_count("shard", "block", block, low=1)
    index = check_count("shard", "index", index)
    if index >= count:
        raise ConfigError(f"shard(index={index}, count={count}): index must be in [0, {count})")
    if count * block > MAX_COUNT:  # positions are int64: (position // block) % count
        raise ConfigError(f"shard(count={count}, block={block}): count * block must be at most "
                          f"{MAX_COUNT:,}")
    if count == 1:
        return pipe
    pushed = pipe._push_shard(index, count, block)
    return pushed if pushed is not None else ShardPipe(pipe, index, count, block)


class ShardPipe(Pipeline):
    """The fallback: read the input and keep own items (skipping others cheaply if it can)."""

    op = "shard"

    def __init__(self, child: Pipeline, index: int, count: int, block: int) -> None:
        super().__init__(child)
        self.index, self.count, self.block = index, count, block

    def _params(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "block": self.block}

    def _length(self) -> int | None:
        n = self._children[0]._length()
        return None if n is None else int(own_count(n, self.index, self.count, self.block))

    def _schema(self) -> pa.Schema | None:
        return self._children[0].schema

    def _build(self, epoch: int) -> Node:
        return _ShardNode(self._children[0]._build(epoch), self.index, self.count, self.block)


class _ShardNode(Node):
    def __init__(self, child: Node, index: int, count: int, block: int) -> None:
        self.cursor = ItemCursor(child)
        self.index, self.count, self.block = index, count, block
        self.p = 0  # position in the input stream
        self._held = HeldError()

    def reset(self, state: State | None = None) -> None:
        self.p = 0 if state is None else int(state[POSITION])
        self._held.error = None
        self.cursor.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        return {POSITION: self.p, CURSOR: self.cursor.get_state()}

    def next(self) -> Chunk:
        self._held.raise_pending()
        parts: list[Chunk] = []
        start, read = self.p, self.cursor.count
        try:
            self._gather(parts)
        except Exception as e:
            # The input failed at an item (a user's function): the position counts what was
            # read before it, the own items gathered go out, then the error; the cursor
            # points at the failing item, so going on (or a resume) runs it again.
            self.p = start + self.cursor.count - read
            self._held.hold(e, len(parts))
        if not parts:
            raise StopIteration
        return concat_chunks(parts)

    def _gather(self, parts: list[Chunk]) -> None:
        have = 0
        while have < _SHARD_CHUNK:
            b, off = divmod(self.p, self.block)
            owner = b % self.count
            if owner != self.index:
                ahead = (self.index - owner) % self.count
                want = ahead * self.block - off
                got = self.cursor.skip(want)
                self.p += got
                if got < want:
                    break
                continue
            got_chunk = self.cursor.take(min(self.block - off, _SHARD_CHUNK - have))
            if got_chunk is None:
                break
            n = chunk_len(got_chunk)
            self.p += n
            have += n
            parts.append(got_chunk)
            if self.cursor.buffered() == 0:
                break  # do not read ahead into the next chunk of the input

    def prefer_items(self) -> None:
        self.cursor.child.prefer_items()

    def start_ahead(self) -> None:
        self.cursor.child.start_ahead()

    def close(self) -> None:
        self.cursor.close()
