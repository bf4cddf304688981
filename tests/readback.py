"""Test helpers that read committed data back without the read path: plain pyarrow.parquet
over the shards a manifest lists, so commit tests do not depend on dload_arrow.read."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from dload_arrow import Repository
from dload_arrow.store.names import shard_path
from dload_arrow.store.tensor_layout import restore

__all__ = ["missing_shards", "read_back", "shard_paths"]


def shard_paths(repo: Repository, name: str, version: str | None = None) -> list[str]:
    """Object paths of the shards of a version, in manifest order."""
    return [shard_path(d) for d in repo.manifest(name, version).table.column("digest").to_pylist()]


def read_back(repo: Repository, name: str, version: str | None = None) -> pa.Table:
    """Every row of a version, in manifest order, read with pyarrow.parquet from the root
    (tensors stored as bytes turned back into their lists, as every reader of shards does)."""
    tables = [
        restore(pq.read_table(pa.BufferReader(repo.storage.read(p))))
        for p in shard_paths(repo, name, version)
    ]
    return pa.concat_tables(tables)


def missing_shards(repo: Repository, name: str, version: str | None = None) -> list[str]:
    """Shards a version lists that are not in the root."""
    return [p for p in shard_paths(repo, name, version) if not repo.storage.exists(p)]
