"""dload's own folders (a local storage root's ``datasets/``, ``shards/`` and ``.locks/``, the
cache) are never read as a user's samples or table rows: not when ``--from`` points into one,
and not when a folder being read holds one (a root kept beside its data: ``root =
"data/store"`` with ``--from data``). A second run of the same commit read the root's manifests
beside a table's files, took the folder for files and published one blob (QA ingest 42)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from dload_arrow.errors import ConfigError

__all__ = ["own_dirs", "refuse_own_data"]


def own_dirs(dirs: Iterable[str | os.PathLike[str]]) -> frozenset[str]:
    """The real paths of dload's own folders, as a walk compares them."""
    return frozenset(os.path.realpath(os.fspath(d)) for d in dirs)


def refuse_own_data(location: str, path: str, dirs: frozenset[str]) -> None:
    """Raise ConfigError when ``path`` (``location`` as given) is one of ``dirs`` or inside one."""
    real = os.path.realpath(path)
    for d in sorted(dirs):
        if real == d or real.startswith(d + os.sep):
            where = "is" if real == d else f"is inside {d}, which is"
            raise ConfigError(
                f"{location!r} {where} one of the folders where dload keeps its own data (a "
                "storage root's datasets/ or shards/, or the cache): its files are manifests "
                "and shards, not samples; point --from at the folder of your files")
