"""``pack(length)``: token sequences of any length concatenated and cut into rows of exactly
``length`` tokens, the usual way to pre-train a language model without padding.

Each output row is ``{column: array[length], "<column>_segment": int32[length]}``: the
tokens, and for each token the number of the document it came from within the row (0, 1, ...:
an attention mask that keeps documents apart, or position ids that restart, is computed from
it). A ``separator`` (an end-of-text id) follows every document. The tokens of the last row of
an epoch, fewer than ``length``, are a shorter row (``drop_remainder=True`` drops them), never
silently lost (a ``scan`` packer loses them: it has no end of stream).

The state is a cursor, never tokens: the input's cursor before the item whose tokens the next
row begins with, and how many of them earlier rows took. A resume reads from that item again,
leaves those tokens out, and continues mid-row, every token once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import check_bool, check_count
from dload_arrow.errors import ConfigError, SchemaError, shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk, chunk_items
from dload_arrow.pipeline.node import BEFORE, DONE, OFFSET, ItemCursor, Node, State

__all__ = ["PackPipe"]

START = "start"  # state: the cursor before the item whose tokens the next row begins with
DROP = "drop"  # state: how many of that item's tokens earlier rows took


class PackPipe(Pipeline):
    op = "pack"

    def __init__(self, child: Pipeline, length: int, column: str, separator: int | None,
                 drop_remainder: bool) -> None:
        n = check_count("pack", "length", length, low=1)
        if not isinstance(column, str) or not column:
            raise TypeError(f"pack(column={shown(column)}): the name of the column of token "
                            "ids, e.g. pack(2048, column='input_ids')")
        if separator is not None and (isinstance(separator, bool) or not isinstance(
                separator, int | np.integer)):
            raise ConfigError(f"pack(separator={shown(separator)}): a token id (an int), e.g. "
                              "the tokenizer's end-of-text id, or None")
        schema = child.schema
        if schema is not None and column not in schema.names:
            raise SchemaError(f"pack(column={column!r}): the rows have no such column (their "
                              f"columns: {', '.join(schema.names)})")
        super().__init__(child)
        self.dtype = _stored_ints(schema, column)  # list<int32> tokens stay int32
        if self.dtype is not None and separator is not None and not (
                np.iinfo(self.dtype).min <= int(separator) <= np.iinfo(self.dtype).max):
            raise ConfigError(f"pack(separator={int(separator)}): the column {column!r} "
                              f"holds {self.dtype} token ids, which cannot hold it")
        self.length, self.column = n, column
        self.separator = None if separator is None else int(separator)
        self.drop_remainder = check_bool("pack", "drop_remainder", drop_remainder)

    def _params(self) -> dict[str, Any]:
        return {"length": self.length, "column": self.column, "separator": self.separator,
                "drop_remainder": self.drop_remainder}

    def _build(self, epoch: int) -> Node:
        return _PackNode(self._children[0]._build(epoch), self)


class _PackNode(Node):
    """The carried tokens are those of the items since ``entries[0]``; the state is the cursor
    before that item and how many of its tokens earlier rows took (``head``)."""

    def __init__(self, child: Node, spec: PackPipe) -> None:
        self.cursor, self.spec = ItemCursor(child), spec
        self.tokens: np.ndarray | None = None  # carried into the next row (< length)
        self.segments = np.zeros(0, np.int32)
        self.entries: deque[tuple[State, int]] = deque()  # (cursor before an item, tokens)
        self.head = 0  # tokens of entries[0] already in rows
        self.drop = 0  # tokens of the next item to leave out (a resume mid-document)
        self.done = False  # the input ended and the remainder went out
        self._last: np.dtype | None = None  # the type of the last document's tokens

    def prefer_items(self) -> None:
        self.cursor.child.prefer_items()  # (rows are read as items here)

    def start_ahead(self) -> None:
        self.cursor.child.start_ahead()

    def reset(self, state: State | None = None) -> None:
        self.cursor.reset(None if state is None else state[START])
        self.tokens, self.segments = None, np.zeros(0, np.int32)
        self.entries.clear()
        self.head = 0
        self.drop = 0 if state is None else int(state[DROP])
        self.done = bool(state and state.get(DONE))

    def get_state(self) -> State:
        if self.entries:
            return {START: self.entries[0][0], DROP: self.head, DONE: self.done}
        return {START: self.cursor.get_state(), DROP: self.drop, DONE: self.done}

    def next(self) -> Chunk:
        if self.done:
            raise StopIteration
        n = self.spec.length
        while True:
            held = 0 if self.tokens is None else len(self.tokens)
            if held >= n:
                return self._rows(held // n)
            got = self.cursor.take_with_state(1 << 16)
            if got is None:
                self.done = True
                if held and not self.spec.drop_remainder:
                    return self._rows(1)
                raise StopIteration
            before, chunk = got
            items = chunk_items(chunk)
            try:
                ids = self._typed([self._ids(x) for x in items])
            except Exception:
                self.cursor.untake(len(items))  # read again next: the state stays before
                raise
            self._add(before, ids)

    def _ids(self, item: Any) -> np.ndarray | None:
        ids = _ids(item, self.spec.column, self.spec.dtype)  # (stored type: uint64 exact)
        sep = self.spec.separator
        if sep is None:
            return ids
        if not ids.size and self.spec.dtype is None:
            return None  # an empty document after a map: typed as its neighbours (_typed)
        dtype = ids.dtype if _holds(ids.dtype, sep) else np.result_type(
            ids.dtype, np.min_scalar_type(sep))  # (byte tokens, 256 after them: uint16)
        if dtype.kind not in "iu":
            raise SchemaError(f"pack(separator={sep}): column {self.spec.column!r} holds "
                              f"{ids.dtype} token ids, and no integer type holds both them and "
                              "the separator; give a separator within their range")
        self._last = dtype
        return np.append(ids.astype(dtype, copy=False), np.asarray(sep, dtype))

    def _typed(self, docs: list[np.ndarray | None]) -> list[np.ndarray]:
        """The documents, an empty one's separator in the type of the tokens around it (QA
        pack62: one empty document, read as int64, made every row of its chunk int64)."""
        sep = self.spec.separator
        dtype = self._last or np.min_scalar_type(sep or 0)
        return [np.asarray([sep], dtype) if d is None else d for d in docs]

    def _add(self, before: State, docs: list[np.ndarray]) -> None:
        """Carry the documents' tokens (the first one's, after a resume, from ``drop``)."""
        parts = [] if self.tokens is None else [self.tokens]
        segs = [self.segments]
        doc = int(self.segments[-1]) + 1 if len(self.segments) else 0
        for j, ids in enumerate(docs):
            at = {BEFORE: before[BEFORE], OFFSET: before[OFFSET] + j}
            if not self.entries:
                self.head, self.drop = self.drop, 0
            self.entries.append((at, len(ids)))
            kept = ids[self.head:] if len(self.entries) == 1 else ids
            if len(kept):  # (an empty document takes no number: segments stay 0, 1, 2...)
                parts.append(kept)
                segs.append(np.full(len(kept), doc, np.int32))
                doc += 1
            self._settle()
        if len(parts) > (self.tokens is not None):
            self.tokens = _joined(parts, self.spec.column)
            self.segments = np.concatenate(segs)

    def _settle(self) -> None:
        """Forget the leading entries whose tokens are all in rows already."""
        while self.entries and self.head >= self.entries[0][1] and len(self.entries) > 1:
            self.head -= self.entries.popleft()[1]

    def _rows(self, count: int) -> list[dict[str, np.ndarray]]:
        """``count`` rows cut from the carried tokens (the last shorter at the end)."""
        assert self.tokens is not None
        n, out = self.spec.length, []
        for i in range(count):
            tokens, segs = self.tokens[i * n:(i + 1) * n], self.segments[i * n:(i + 1) * n]
            out.append({self.spec.column: tokens,
                        f"{self.spec.column}_segment": segs - segs[0]})
        used = min(count * n, len(self.tokens))
        self.tokens, self.segments = self.tokens[used:], self.segments[used:]
        self.head += used
        while self.entries and self.head >= self.entries[0][1]:
            self.head -= self.entries.popleft()[1]
        if not self.entries:
            self.head = 0
        return out

    def close(self) -> None:
        self.cursor.close()


def _stored_ints(schema: pa.Schema | None, column: str) -> np.dtype | None:
    """The integer type of a stored ``list<int*>`` column, else None (the rows' own)."""
    if schema is None or column not in schema.names:
        return None
    t = schema.field(column).type
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(
            t.value_type):
        return np.dtype(t.value_type.to_pandas_dtype())
    return None


def _ids(item: Any, column: str, dtype: np.dtype | None = None) -> np.ndarray:
    """One row's token ids as a 1-D integer array (in ``dtype``, a stored column's type, when
    known); SchemaError naming the row otherwise."""
    if not isinstance(item, Mapping) or column not in item:
        what = f"columns {sorted(item)}" if isinstance(item, Mapping) else type(item).__name__
        raise SchemaError(f"pack: a row has no column {column!r} ({what}); pack(column=...) "
                          "names the column of token ids")
    value = item[column]
    try:
        ids = np.asarray([] if value is None else value, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        ids = np.asarray([] if value is None else value, dtype=object)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        key = item.get("__key__")
        raise SchemaError(f"pack: column {column!r} of row {key!r} holds {shown(value)}, not a "
                          "list of token ids (ints)")
    return ids if ids.size or dtype is not None else ids.astype(np.int64)


def _holds(dtype: np.dtype, value: int) -> bool:
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


def _joined(parts: list[np.ndarray], column: str) -> np.ndarray:
    """The parts end to end in one integer type (the widest: int32 tokens stay int32)."""
    kinds = {p.dtype for p in parts if p.size}
    dtype = np.result_type(*kinds) if kinds else np.dtype(np.int64)
    if dtype.kind not in "iu":  # uint64 beside int64: numpy's pick is float64
        raise SchemaError(f"pack: column {column!r} holds token ids of types "
                          f"{sorted(map(str, kinds))} that no one integer type holds")
    return np.concatenate([p.astype(dtype, copy=False) for p in parts])
