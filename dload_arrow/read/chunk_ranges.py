"""Whether a random-access read of some columns should fetch only their column chunks.

A ``get``/``take`` on a remote root reads one row group by range: the whole row group, in one
GET. With large values beside small ones (4 MB scans beside a JSON column), reading the small
column fetched the scans too (QA video60: 4.2 MB for one small value). When the columns read
hold under half the row group's bytes, the Parquet reader fetches just their chunks instead
(one ranged GET each, through ``random_access.RangeFile``); otherwise one GET of the whole row
group stays cheaper than several.
"""

from __future__ import annotations

import pyarrow.parquet as pq

__all__ = ["chunks_only"]

_SPARSE_SHARE = 0.5
_MIN_SAVED = 1 << 20  # fewer bytes saved than this: one GET of the row group


def chunks_only(meta: pq.FileMetaData, rg: int, columns: list[str] | None) -> bool:
    """Whether reading ``columns`` (top-level names) of row group ``rg`` should fetch only
    their chunks (module docstring)."""
    if columns is None:
        return False
    group = meta.row_group(rg)
    wanted = set(columns)
    total = read = 0
    for j in range(group.num_columns):
        c = group.column(j)
        total += c.total_compressed_size
        if c.path_in_schema.split(".")[0] in wanted:
            read += c.total_compressed_size
    return read < total * _SPARSE_SHARE and total - read >= _MIN_SAVED
