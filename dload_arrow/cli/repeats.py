"""The warning of a table append whose rows repeat, value for value, the rows before them.

A table without a key column gets row numbers as keys, so the same file appended twice (a
command run again from the shell history) stores every row twice under new keys: no key clash
can catch it. After such an append the CLI compares the rows it added with as many rows just
before them and, when they are equal, says so and how to undo it. The check reads both spans
(from the cache the append just filled, for the new rows), so it is skipped above ``LIMIT``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LIMIT", "repeated_rows"]

LIMIT = 256 << 20  # bytes the appended rows may take for the check to run


def repeated_rows(repo: Any, version: Any) -> int | None:
    """How many rows the append ``version`` added if they equal the rows just before them
    and their keys were generated (row numbers); else None."""
    m = version.manifest
    parent = next((p for p in m.parents
                   if p.get("name") == version.name and p.get("relation") == "append"), None)
    if parent is None:
        return None
    before = repo.manifest(version.name, parent["version"])
    start, n = before.num_rows, m.num_rows - before.num_rows
    if not 0 < n <= start or m.num_bytes - before.num_bytes > LIMIT:
        return None
    ds = repo.dataset(version.name, version.version)
    added = ds.take(list(range(start, start + n)))
    if added.column("__key__").to_pylist() != [f"{i:012d}" for i in range(start, start + n)]:
        return None  # keys from the input: a repeat would have clashed
    earlier = ds.take(list(range(start - n, start)))
    same = added.drop_columns(["__key__"]).equals(earlier.drop_columns(["__key__"]))
    return n if same else None
