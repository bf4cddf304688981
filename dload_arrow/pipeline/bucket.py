"""``bucket(size)``: items reordered so that each run of ``size`` holds sequences of similar
length, for a ``batch(size)`` right after it that pads little (length bucketing).

The stream is read in consecutive windows of ``window`` items (a multiple of ``size``); each
window is sorted by the length of ``column`` (stable: equal lengths keep their order), cut
into groups of ``size``, and the full groups come out in an order drawn from ``(seed, epoch,
window)``, a short last group (the epoch's end) last: batches of similar lengths, not sorted
from short to long. As the buffered shuffle, the state is the input cursor at the window's
start, re-read on a resume; it never holds samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.args import check_count
from dload_arrow.errors import ConfigError, SchemaError, shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.buffer_shuffle import _BufferShuffleNode
from dload_arrow.pipeline.chunks import Chunk, chunk_items
from dload_arrow.pipeline.node import Node
from dload_arrow.plan.seeds import check_seed, rng

__all__ = ["BucketPipe"]

WINDOW_BATCHES = 64  # the default window: this many batches' items


class BucketPipe(Pipeline):
    op = "bucket"

    def __init__(self, child: Pipeline, size: int, column: str, window: int | None,
                 seed: int) -> None:
        n = check_count("bucket", "size", size, low=1)
        w = n * WINDOW_BATCHES if window is None else check_count("bucket", "window", window,
                                                                   low=1)
        if w % n:
            raise ConfigError(f"bucket(size={n}, window={w}): the window must be a multiple "
                              f"of the batch size (e.g. {max(1, round(w / n)) * n}), so that "
                              "the batches after it stay aligned with its groups")
        schema = child.schema
        if not isinstance(column, str) or (schema is not None and column not in schema.names):
            raise SchemaError(f"bucket(column={shown(column)}): the rows have no such column"
                              + ("" if schema is None else
                                 f" (their columns: {', '.join(schema.names)})"))
        super().__init__(child)
        self.size, self.column, self.window, self.seed = n, column, w, check_seed(seed)

    def _params(self) -> dict[str, Any]:
        return {"size": self.size, "column": self.column, "window": self.window,
                "seed": self.seed}

    def _length(self) -> int | None:
        return self._children[0]._length()

    def _schema(self) -> pa.Schema | None:
        return self._children[0].schema

    def _build(self, epoch: int) -> Node:
        return _BucketNode(self._children[0]._build(epoch), self, epoch)


class _BucketNode(_BufferShuffleNode):
    def __init__(self, child: Node, spec: BucketPipe, epoch: int) -> None:
        super().__init__(child, spec.window, spec.seed, epoch)
        self.spec = spec

    def _order(self, window: Chunk, have: int) -> Any:
        size = self.spec.size
        by_length = np.argsort(_lengths(window, self.spec.column), kind="stable")
        full = have // size
        groups = rng(self.seed, self.epoch, "bucket", self.w).permutation(full)
        order = [by_length[g * size:(g + 1) * size] for g in groups]
        return np.concatenate([*order, by_length[full * size:]]) if have else by_length


def _lengths(window: Chunk, column: str) -> np.ndarray:
    """How long each item's ``column`` is (a null: 0); SchemaError naming an item without."""
    if isinstance(window, pa.RecordBatch) and column in window.schema.names:
        values = window.column(column)
        if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
            return np.asarray(pc.fill_null(pc.list_value_length(values), 0))
        if pa.types.is_string(values.type) or pa.types.is_binary(values.type):
            return np.asarray(pc.fill_null(pc.binary_length(values), 0))
    out = []
    for x in chunk_items(window):
        if not isinstance(x, Mapping) or column not in x:
            raise SchemaError(f"bucket: an item has no column {column!r} ({shown(x)}); "
                              "bucket(column=...) names the sequences to group by length")
        v = x[column]
        try:
            out.append(0 if v is None else len(v))
        except TypeError as e:
            raise SchemaError(f"bucket: column {column!r} holds {shown(v)}, which has no "
                              "length (a list, array or text)") from e
    return np.asarray(out, dtype=np.int64)
