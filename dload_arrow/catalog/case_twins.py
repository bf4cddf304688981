"""Names SQL cannot tell apart: DuckDB matches identifiers without regard to ASCII case
(even double-quoted; it folds no other letter), so ``samples()`` of a dataset with columns (or
struct fields) whose names differ only in case would silently read one for the other."""

from __future__ import annotations

import pyarrow as pa

from dload_arrow.errors import SqlError

__all__ = ["refuse_case_twins"]


def refuse_case_twins(name: str, schema: pa.Schema) -> None:
    """Refuse a dataset with two columns whose names differ only in case: DuckDB matches
    identifiers without regard to case, even quoted, so SQL would silently read one column
    for the other (``"label"`` gives ``Label``'s values; ``*`` renames one to ``label_1``)."""
    for first, col in _case_twins(list(schema))[:1]:
        raise SqlError(
            f"samples({name!r}) cannot be read by SQL: its columns {first!r} and {col!r} "
            "differ only in ASCII case, and DuckDB matches column names without regard to case "
            "(even double-quoted), so a query would read one for the other; rename one in "
            "a new version (repo.derive or repo.commit, e.g. of ds.to_arrow()"
            f".rename_columns(...)), or read it with ds.to_polars(), ds.to_arrow() or "
            f"ds.where(), which keep {first!r} and {col!r} apart"
        )


# DuckDB folds ASCII letters only: 'É' and 'é' are two columns to it.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _case_twins(fields: list[pa.Field], path: str = "") -> list[tuple[str, str]]:
    """Pairs of names (dotted paths) that differ only in case, at every depth of structs."""
    seen: dict[str, str] = {}
    out = []
    for f in fields:
        name = f"{path}{f.name}"
        first = seen.setdefault(f.name.translate(_ASCII_LOWER), name)
        if first != name:
            out.append((first, name))
        t = f.type
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            t = t.value_type
        if pa.types.is_struct(t):
            out += _case_twins(list(t), f"{name}.")
    return out
