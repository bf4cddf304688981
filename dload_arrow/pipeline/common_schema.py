"""The one schema of a combinator's inputs (concat, mix, choice, select), and the cast to it.

Inputs whose schemas are equal keep it. Inputs that differ only in ways one schema can hold
exactly get that schema, and each input's record batches are cast to it on the way out:

- ``views=True`` and plain inputs share the view schema (binary and string as views: a cast
  that copies no value);
- an integer or float column that is narrower in some inputs gets the widest (``int32`` and
  ``int64`` -> ``int64``, ``float32`` and ``float64`` -> ``float64``; an unsigned one joins a
  signed one only when the signed one holds all its values). Without it, each batch took the
  type of the rows it held: ``int64`` tensors, then ``int32`` ones mid-epoch (QA evolve56).

Anything else (other columns, a type no other one holds exactly: ``int64`` and ``float64``,
a tensor of another shape) leaves the inputs without a common schema: their items keep their
own types and shapes, and ``batch()`` says what differs when a batch meets both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.errors import SchemaError
from dload_arrow.pipeline.chunks import Chunk, same_schema
from dload_arrow.pipeline.node import Node, State
from dload_arrow.pipeline.views import as_views, is_view, view_schema
from dload_arrow.store.rows import field_shape

__all__ = ["cast_to", "common_schema", "refuse_unlike_columns"]


def common_schema(pipes: Sequence[Any]) -> pa.Schema | None:
    """The inputs' one schema (None: they differ, or are not rows): see the module docstring."""
    schemas: list[pa.Schema | None] = [p.schema for p in pipes]
    if any(s is None for s in schemas):
        return None
    known: list[pa.Schema] = [s for s in schemas if s is not None]
    first = known[0]
    if all(same_schema(s, first) for s in known):
        return first
    if any(field_shape(f) != field_shape(g) for s in known for f, g in zip(s, first, strict=False)):
        return None  # the same bytes, another shape (metadata: Schema.equals does not see it)
    if any(is_view(t) for s in known for t in s.types):
        known = [view_schema(s) for s in known]
        first = known[0]
    if any(s.names != first.names for s in known):
        return None
    fields = []
    for i, f in enumerate(first):
        t: pa.DataType | None = f.type
        for s in known[1:]:
            t = _wider(t, s.field(i).type) if t is not None else None
        if t is None:
            return None
        fields.append(f.with_type(t).with_nullable(any(s.field(i).nullable for s in known)))
    return pa.schema(fields, metadata=first.metadata)


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type that holds every value of ``a`` and of ``b`` exactly (None: neither does)."""
    if a.equals(b):
        return a
    ints = pa.types.is_integer
    if ints(a) and ints(b):
        sa, sb = pa.types.is_signed_integer(a), pa.types.is_signed_integer(b)
        if sa == sb:
            return a if a.bit_width >= b.bit_width else b
        signed, unsigned = (a, b) if sa else (b, a)
        return signed if signed.bit_width > unsigned.bit_width else None
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return a if a.bit_width >= b.bit_width else b
    return None


def cast_to(pipe: Any, node: Node, common: pa.Schema | None) -> Node:
    """``pipe``'s ``node``, its record batches cast to the inputs' ``common`` schema when
    ``pipe``'s own differs (a zero-copy view cast, or a widening)."""
    own = pipe.schema
    if common is None or own is None or own.equals(common):
        return node
    return _CastNode(node, common)


class _CastNode(Node):
    """A child's batches in the common schema; the child's state is its own, so a resume is
    the same with or without this step."""

    def __init__(self, child: Node, common: pa.Schema) -> None:
        self.child = child
        self.common = common
        self.views = any(is_view(t) for t in common.types)
        self.cheap_skip = child.cheap_skip

    def reset(self, state: State | None = None) -> None:
        self.child.reset(state)

    def get_state(self) -> State:
        return self.child.get_state()

    def next(self) -> Chunk:
        chunk = self.child.next()
        if not isinstance(chunk, pa.RecordBatch):
            return chunk
        if self.views:
            chunk = as_views(chunk)
        if not chunk.schema.equals(self.common):
            chunk = chunk.cast(self.common)
        return chunk

    def skip(self, n: int) -> int:
        return self.child.skip(n)

    def close(self) -> None:
        self.child.close()

    def prefer_items(self) -> None:
        self.child.prefer_items()

    def start_ahead(self) -> None:
        self.child.start_ahead()


# Steps that pass their input's columns through as they are.
_SAME_COLUMNS = frozenset({"take", "skip", "filter", "shuffle_buffer", "repeat", "shard"})


def _input_columns(pipe: Any) -> list[tuple[str, ...]] | None:
    """The column names of each input a combinator below ``pipe`` draws from, when all are
    known (datasets and their views, through steps that keep columns), else None."""
    while pipe.op in _SAME_COLUMNS:
        pipe = pipe._children[0]
    if pipe.op in ("concat", "mix", "choice", "select", "router"):
        inputs = pipe._children[: getattr(pipe, "n", len(pipe._children))]
        names = [tuple(c.schema.names) if c.schema is not None else None for c in inputs]
        return None if any(n is None for n in names) else names  # type: ignore[return-value]
    return None


def refuse_unlike_columns(pipe: Any) -> None:
    """Refuse, when iteration starts, a default-collated batch of a mix/concat whose inputs
    have other columns: it failed at the first batch that met both, after every batch of the
    first input (hours into training; QA evolve56)."""
    names = _input_columns(pipe)
    if names and any(set(n) != set(names[0]) for n in names):
        i = next(i for i, n in enumerate(names) if set(n) != set(names[0]))
        raise SchemaError(
            f"batch: input {i} of {pipe!r} has columns {list(names[i])} and input 0 "
            f"{list(names[0])}; a batch needs the same columns: select() or map() the inputs "
            "to the same columns, or pass collate=")
