"""What :meth:`Repository.versions` lists of each stored version, and its order."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VersionInfo"]


@dataclass(frozen=True)
class VersionInfo:
    """One stored version of a dataset, as listed by :meth:`Repository.versions`."""

    name: str
    version: str
    num_rows: int
    num_bytes: int
    num_shards: int
    time: float | None
    user: str | None
    refs: tuple[str, ...]
    parents: tuple[str, ...]
