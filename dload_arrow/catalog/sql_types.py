"""DuckDB column types that Arrow cannot tell: a JSON column arrives as plain text.

``repo.sql`` marks such a column in its field metadata (``{"duckdb_type": "JSON"}``), so a
reader (``dload sql --json``) can embed its values as JSON rather than as strings of JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

__all__ = ["SQL_TYPE", "is_json", "mark_types"]

SQL_TYPE = b"duckdb_type"
"""The field metadata key holding the DuckDB type of a column Arrow holds as text."""

_MARKED = frozenset({"JSON"})


def mark_types(table: pa.Table, types: Sequence[Any]) -> pa.Table:
    """``table`` with each column whose DuckDB type (``types``, a relation's) is JSON marked."""
    names = [str(t) for t in types]
    if len(names) != table.num_columns or not _MARKED.intersection(names):
        return table
    fields = [f.with_metadata({**(f.metadata or {}), SQL_TYPE: n.encode()})
              if n in _MARKED and pa.types.is_string(f.type) else f
              for f, n in zip(table.schema, names, strict=True)]
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))


def is_json(field: pa.Field) -> bool:
    """Whether ``field`` is a column :func:`mark_types` marked as DuckDB JSON."""
    return (field.metadata or {}).get(SQL_TYPE) == b"JSON"
