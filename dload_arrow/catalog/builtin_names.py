"""What the names of the catalog's built-in views and raw tables resolve to in a DuckDB
connection, and the refusal of a query that changed it (they are read-only)."""

from __future__ import annotations

from typing import Any

from dload_arrow.catalog.statements import VIEW_ORDER
from dload_arrow.catalog.tables import RAW_SCHEMAS

__all__ = ["changed_builtins", "resolution"]

_BUILTIN = sorted({*VIEW_ORDER, *RAW_SCHEMAS})
# What the names of the built-in views resolve to: the objects holding them in any database
# or schema (a temp view shadows main's), and the settings that choose among those. Inline
# rather than in sql/: it reads DuckDB's own catalog, not the root's.
_RESOLUTION = """
SELECT database_name, schema_name, view_name, 'view', sql FROM duckdb_views()
WHERE NOT internal AND lower(view_name) IN (SELECT unnest($names))
UNION ALL
SELECT database_name, schema_name, table_name, 'table', sql FROM duckdb_tables()
WHERE lower(table_name) IN (SELECT unnest($names))
UNION ALL
SELECT current_database(), current_schema(), current_setting('search_path'), 'setting', ''
ORDER BY ALL
"""


def resolution(con: Any) -> list[tuple[Any, ...]]:
    """What each built-in name resolves to in ``con`` now (compare before and after a query)."""
    rows: list[tuple[Any, ...]] = con.execute(_RESOLUTION, {"names": _BUILTIN}).fetchall()
    return rows


def changed_builtins(before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]) -> str | None:
    """The refusal of a query that changed what a built-in name resolves to, or None."""
    if after == before:
        return None
    changed = sorted({str(r[2]) for r in set(before) ^ set(after) if r[3] != "setting"})
    what = f"view(s) {', '.join(changed)}" if changed else "views' search path"
    return (f"the query changed the catalog's built-in {what}; they are read-only, so the "
            "catalog was reset to them (tables and views this session created are gone): "
            "give your own views and tables other names")
