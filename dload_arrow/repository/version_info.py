"""What :meth:`Repository.versions` lists of each stored version, and its order."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VersionInfo", "newest_first"]


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


def newest_first(v: VersionInfo) -> tuple[bool, float, str]:
    """A version's sort key, newest last: one without a time (a commit in flight, its log
    entry not yet written) as the newest (QA threads66: a retention job's rm of
    ``versions()[N:]`` removed appends in flight, their rows lost)."""
    return v.time is None, v.time or 0.0, v.version
