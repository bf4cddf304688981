"""The one schema of a combinator's inputs (concat, mix, choice, select), and the cast to it.

Inputs whose schemas are equal keep it. Inputs with the same columns (matched by name, in
the first input's order) whose types one type holds exactly get that type, unified over all
inputs at once (QA mix56: pairwise, the answer depended on the inputs' order), and each
input's record batches are cast to it on the way out:

- ``views=True`` and plain inputs share the view schema (a cast that copies no value);
- integers and floats: the narrowest type holding all (``int32`` and ``int64`` -> ``int64``,
  ``int8`` and ``uint8`` -> ``int16``, ``int32`` and ``float32`` -> ``float64``); text and
  bytes: ``large_string`` / ``large_binary``; lists and tensors of one shape: of the unified
  item type. Without it each batch took the type of the rows it held: ``int64`` tensors, then
  ``int32`` ones mid-epoch (QA evolve56).

Anything else (other columns; ``int64`` and ``float64``, ``uint64`` and a signed type, which no
type holds exactly; a tensor of another shape) leaves the inputs without a common schema: their
items keep their own types and shapes. A default-collated ``batch()`` of a ``mix`` whose drawn
inputs have other columns is refused when iteration starts (:func:`refuse_unlike_columns`).
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
    """The inputs' one schema (None: they differ, or are not rows): see the module docstring.
    Columns are matched by name (the first input's order); their types are unified over all
    inputs at once, so the answer does not depend on the inputs' order."""
    schemas: list[pa.Schema | None] = [p.schema for p in pipes]
    if any(s is None for s in schemas):
        return None
    known: list[pa.Schema] = [s for s in schemas if s is not None]
    first = known[0]
    if all(same_schema(s, first) for s in known):
        return first
    names = first.names
    if len(set(names)) != len(names) or any(sorted(s.names) != sorted(names) for s in known):
        return None
    if any(field_shape(s.field(n)) != field_shape(first.field(n)) for s in known for n in names):
        return None  # the same bytes, another shape (metadata: Schema.equals does not see it)
    if any(is_view(t) for s in known for t in s.types):
        known = [view_schema(s) for s in known]
        first = known[0]
    fields = []
    for f in first:
        t = _common_type([s.field(f.name).type for s in known])
        if t is None:
            return None
        fields.append(f.with_type(t).with_nullable(any(s.field(f.name).nullable for s in known)))
    return pa.schema(fields, metadata=first.metadata)


_SIGNED = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
_FLOATS = ((pa.float16(), 11), (pa.float32(), 24), (pa.float64(), 53))  # (type, mantissa bits)


def _common_type(types: list[pa.DataType]) -> pa.DataType | None:
    """The type that holds every value of every one of ``types`` exactly (None: none does)."""
    first = types[0]
    if all(t.equals(first) for t in types):
        return first
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in types):
        return _number_type(types)
    for kind, wide in ((pa.types.is_string, pa.types.is_large_string),
                       (pa.types.is_binary, pa.types.is_large_binary)):
        if all(kind(t) or wide(t) for t in types):
            return pa.large_string() if kind is pa.types.is_string else pa.large_binary()
    for kind, make in ((pa.types.is_list, pa.list_), (pa.types.is_large_list, pa.large_list)):
        if all(kind(t) for t in types):
            inner = _common_type([t.value_type for t in types])
            return None if inner is None else make(inner)
    if all(pa.types.is_fixed_size_list(t) for t in types) and len(
            {t.list_size for t in types}) == 1:  # tensors of one shape
        inner = _common_type([t.value_type for t in types])
        return None if inner is None else pa.list_(inner, first.list_size)
    return None


def _number_type(types: list[pa.DataType]) -> pa.DataType | None:
    """int8 and uint8 -> int16; int32 and float32 -> float64; int64 and float64, uint64 and a
    signed type -> None (2**60 + 1 has no double, 2**64 - 1 no int64)."""
    ints = [t for t in types if pa.types.is_integer(t)]
    signed = any(pa.types.is_signed_integer(t) for t in ints)
    need = max((t.bit_width - pa.types.is_signed_integer(t) for t in ints), default=0)
    floats = [t.bit_width for t in types if pa.types.is_floating(t)]
    if floats:
        return next((t for t, bits in _FLOATS if t.bit_width >= max(floats) and bits >= need),
                    None)
    if not signed:
        return max(ints, key=lambda t: t.bit_width)
    return next((t for t in _SIGNED if t.bit_width - 1 >= need), None)


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
        if chunk.schema.names != self.common.names:  # the same columns in another order
            chunk = chunk.select(self.common.names)
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


# Steps that pass their input's columns and order through as they are.
_SAME_COLUMNS = frozenset({"filter", "shuffle_buffer", "repeat", "shard"})


def _drawn_columns(pipe: Any) -> list[tuple[int, tuple[str, ...]]] | None:
    """(input, its column names) of each input of positive weight of a ``mix`` below
    ``pipe``, when all are known (datasets and their views), else None. Only a mix: its
    draws interleave the inputs item by item, so a batch meets two of them almost surely,
    where a concat, a select or a choice can keep each batch to one input (QA review56)."""
    while pipe.op in _SAME_COLUMNS:
        pipe = pipe._children[0]
    if pipe.op != "mix" or getattr(pipe, "weights", None) is None:
        return None
    drawn = [(i, c) for i, (c, w) in enumerate(zip(pipe._children[: pipe.n], pipe.weights,
                                                   strict=True)) if w > 0]
    if any(c.schema is None for _, c in drawn):
        return None
    return [(i, tuple(c.schema.names)) for i, c in drawn]


def refuse_unlike_columns(pipe: Any, size: int, by: str | None = None) -> None:
    """Refuse, when iteration starts, a batch (of more than one item) of a mix whose drawn
    inputs have other columns, collated by default or by ``by`` (``pad_collate``, which
    collates its other columns as the default does): it failed at the first batch that met
    both, an epoch's random step in (QA evolve56, finetune61)."""
    drawn = _drawn_columns(pipe) if size > 1 else None
    if drawn is None and size > 1:  # a mix of mixes: its own draws meet in the batch too
        inner = pipe
        while inner.op in _SAME_COLUMNS:
            inner = inner._children[0]
        if inner.op == "mix" and getattr(inner, "weights", None) is not None:
            for c, w in zip(inner._children[: inner.n], inner.weights, strict=True):
                if w > 0 and c.schema is None:
                    refuse_unlike_columns(c, size, by)
    if drawn and any(set(n) != set(drawn[0][1]) for _, n in drawn):
        (i0, n0), (i, n) = drawn[0], next(x for x in drawn if set(x[1]) != set(drawn[0][1]))
        raise SchemaError(
            f"batch: input {i} of {pipe!r} has columns {list(n)} and input {i0} {list(n0)}; "
            "the mix draws both into one batch, which needs the same columns: select() or "
            "map() the inputs to the same columns" + same_columns_fix(by))


def same_columns_fix(by: str | None) -> str:
    """The end of a different-columns refusal: a collate of one's own, unless one is used."""
    if by is None:
        return ", or pass collate="
    return (f" ({by} needs them alike too: a map() can give an input the list column it "
            "lacks as an empty list, which pads to all pad values)")
