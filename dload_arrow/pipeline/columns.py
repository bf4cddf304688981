"""``select``: keep some columns of each row.

A 1:1 operator (its state is the child's, and ``shard``/``skip`` pass through it). The columns
are checked against the input's schema when the pipeline is built, where the schema is known
(dataset rows); otherwise, row by row as they arrive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.args import column_names
from dload_arrow.errors import SchemaError, shown
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk
from dload_arrow.pipeline.node import Node
from dload_arrow.pipeline.transforms import _FnNode

__all__ = ["SelectPipe"]


def _missing(columns: Sequence[str], have: Sequence[str]) -> SchemaError:
    gone = [c for c in columns if c not in have]
    return SchemaError(f"select: no column(s) {gone}; rows have {list(have)}")


def _why(items: Sequence[Any], columns: Sequence[str]) -> Exception | None:
    """What makes ``select`` fail on ``items``: the first item not a row or lacking a column."""
    for x in items:
        if not isinstance(x, Mapping):
            return TypeError(f"select: items must be dicts (rows), got {type(x).__name__} "
                             f"{shown(x)}")
        if not all(c in x for c in columns):
            return _missing(columns, list(x))
    return None


class SelectPipe(Pipeline):
    op = "select_columns"

    def __init__(self, child: Pipeline, columns: str | Sequence[str]) -> None:
        names = column_names(columns, "select")
        if names is None:
            raise TypeError(f"select(columns={shown(columns)}): name the columns to keep, e.g. "
                            "select(['image', 'label'])")
        schema = child.schema
        if schema is not None and not all(c in schema.names for c in names):
            raise _missing(names, schema.names)
        super().__init__(child)
        self.columns = names

    def _params(self) -> dict[str, Any]:
        return {"columns": self.columns}

    def _length(self) -> int | None:
        return self._children[0]._length()

    def _schema(self) -> pa.Schema | None:
        schema = self._children[0].schema
        if schema is None or not all(c in schema.names for c in self.columns):
            return None
        return pa.schema([schema.field(c) for c in self.columns])

    def _build(self, epoch: int) -> Node:
        cols = self.columns

        def apply(chunk: Chunk) -> Chunk:
            if isinstance(chunk, pa.RecordBatch):
                if not all(c in chunk.schema.names for c in cols):
                    raise _missing(cols, chunk.schema.names)
                return chunk.select(cols)
            try:
                return [{c: item[c] for c in cols} for item in chunk]
            except (KeyError, TypeError, IndexError) as e:
                why = _why(chunk, cols)
                if why is None:
                    raise
                raise why from e

        return _FnNode(self._children[0]._build(epoch), apply, True, "select")

    def _push_shard(self, index: int, count: int, block: int) -> Pipeline | None:
        from dload_arrow.pipeline.shard import shard

        return SelectPipe(shard(self._children[0], index, count, block), self.columns)
