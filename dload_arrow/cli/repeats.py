"""The warning of a table append whose rows repeat, value for value, the rows before them.

A table without a key column gets row numbers as keys, so the same file appended twice (a
command run again from the shell history) stores every row twice under new keys: no key clash
can catch it. After such an append the CLI compares the rows it added with as many rows just
before them and, when they are equal, says so and how to undo it. A few rows are compared
first, so an append of other rows stops there; a repeat reads both spans (the new one from
the cache the append just filled), so the check is skipped above ``LIMIT``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LIMIT", "repeated_rows"]

LIMIT = 256 << 20  # bytes the appended rows may take for the check to run
_FIRST = 16  # rows compared before the whole spans


def repeated_rows(repo: Any, version: Any) -> int | None:
    """How many rows the append ``version`` added if they equal the rows just before them
    and their keys were generated (row numbers); else None (also when the check fails: the
    append is published whatever it finds)."""
    try:
        return _repeated(repo, version)
    except Exception:  # a warning's check: the append itself succeeded
        return None


def _repeated(repo: Any, version: Any) -> int | None:
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
    for count in (min(n, _FIRST), n) if n > _FIRST else (n,):
        added, earlier = _span(ds, start, count), _span(ds, start - n, count)
        keys = added.column("__key__").to_pylist()
        if keys != [f"{i:012d}" for i in range(start, start + count)]:
            return None  # keys from the input: a repeat would have clashed
        if not _same(added.drop_columns(["__key__"]), earlier.drop_columns(["__key__"])):
            return None
    return n


def _span(ds: Any, start: int, count: int) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches(list(ds.pipeline().skip(start).take(count).iter_chunks()))


def _same(a: Any, b: Any) -> bool:
    """Whether two tables hold the same values, NaN equal to NaN (as the bits of a float)."""
    import pyarrow as pa

    if a.schema != b.schema:
        return False
    for x, y in zip(a.columns, b.columns, strict=True):
        x, y = x.combine_chunks(), y.combine_chunks()
        if pa.types.is_floating(x.type):
            bits = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[x.type.bit_width]
            x, y = x.view(bits), y.view(bits)
        if not x.equals(y):
            return False
    return True
