"""Catalog and exploration: DuckDB SQL over manifests, lineage, predicates with pruning.

The only package that imports duckdb (lazily, when a catalog is first queried).
"""

from __future__ import annotations

from dload_arrow.catalog.catalog import Catalog, SqlError
from dload_arrow.catalog.files import shard_files
from dload_arrow.catalog.lineage import Lineage, lineage_of
from dload_arrow.store.manifest_cache import ManifestCache

__all__ = ["Catalog", "Lineage", "ManifestCache", "SqlError", "lineage_of", "shard_files"]
