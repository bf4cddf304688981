"""Column chunks of a shard's row groups: which top-level column each leaf belongs to, their
decoded sizes, and the byte ranges a random-access read of some columns needs.

A ``get``/``take`` on a remote root reads one row group by range: the whole row group, in one
GET. With large values beside small ones (4 MB scans beside a JSON column), reading the small
column fetched the scans too (QA video60: 4.2 MB for one small value). When the columns read
hold under half the row group's bytes, only their chunks are fetched: their byte ranges,
merged where they lie close, at most ``_MAX_RANGES`` (8) GETs (QA review60e: one GET per chunk
made 20 small columns 231 GETs, 10x slower); otherwise one GET of the row group stays cheaper.

A leaf's column is found by position in the Arrow schema (its leaf count), never by splitting
its dotted path: a column named ``seg.png`` counted as none (QA review60e).
"""

from __future__ import annotations

import pyarrow.parquet as pq

from dload_arrow.type_walk import leaf_count

__all__ = ["leaf_owners", "needed_ranges"]

_SPARSE_SHARE = 0.5
_MIN_SAVED = 1 << 20  # fewer bytes saved than this: one GET of the row group
_MAX_RANGES = 8
_GAP = 256 << 10  # chunks closer than this are fetched in one range


def leaf_owners(meta: pq.FileMetaData) -> list[str] | None:
    """The top-level column name of each leaf column (column chunk), in order; None when the
    Arrow schema's leaves do not add up to the file's (a type counted otherwise: callers then
    read whole row groups, or count every column)."""
    out: list[str] = []
    for f in meta.schema.to_arrow_schema():
        out += [f.name] * leaf_count(f.type)
    return out if len(out) == meta.num_columns else None


def needed_ranges(meta: pq.FileMetaData, rg: int, columns: list[str] | None
                  ) -> list[tuple[int, int]] | None:
    """The ``(start, end)`` byte ranges holding ``columns`` (top-level names) of row group
    ``rg``, merged, when fetching only them pays (module docstring); None: the whole row
    group."""
    if columns is None:
        return None
    owners = leaf_owners(meta)
    if owners is None:
        return None
    group = meta.row_group(rg)
    wanted = set(columns)
    total = read = 0
    spans: list[tuple[int, int]] = []
    for j, owner in enumerate(owners):
        c = group.column(j)
        total += c.total_compressed_size
        if owner in wanted:
            read += c.total_compressed_size
            start = min(o for o in (c.dictionary_page_offset, c.data_page_offset)
                        if o is not None and o >= 0)
            spans.append((start, start + c.total_compressed_size))
    if not spans or read >= total * _SPARSE_SHARE or total - read < _MIN_SAVED:
        return None
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start - merged[-1][1] <= _GAP:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged if len(merged) <= _MAX_RANGES else None
