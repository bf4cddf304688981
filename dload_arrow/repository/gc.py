"""Garbage collection of shards that no manifest references."""

from __future__ import annotations

import time
from dataclasses import dataclass

from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest

__all__ = ["GcReport", "collect_garbage", "referenced_digests"]


@dataclass(frozen=True)
class GcReport:
    """What gc deleted (or would delete, with ``dry_run``) and what it kept."""

    deleted: list[str]
    bytes_reclaimed: int
    kept_referenced: int
    kept_young: int
    dry_run: bool


def referenced_digests(storage: Storage) -> set[str]:
    """Every shard digest referenced by any manifest of any dataset under the root."""
    refs: set[str] = set()
    for obj in storage.list("datasets/"):
        parts = obj.path.split("/")
        if len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow"):
            vid = parts[3][: -len(".arrow")]
            refs.update(Manifest.from_bytes(storage.read(obj.path), vid).digests())
    return refs


def collect_garbage(storage: Storage, grace: float, dry_run: bool = False) -> GcReport:
    """Delete shards that no manifest references and that are older than ``grace`` seconds.

    The grace period protects a commit in progress, whose shards are stored before its
    manifest: keep it longer than your longest commit.
    """
    # List shards before reading manifests: a shard uploaded after the listing is not a
    # candidate, and a manifest stored after it only references shards we will see as young.
    shards = storage.list("shards/")
    refs = referenced_digests(storage)
    now = time.time()
    deleted, reclaimed, young, kept = [], 0, 0, 0
    for obj in shards:
        digest = obj.path.rsplit("/", 1)[-1].split(".")[0]
        if digest in refs:
            kept += 1
            continue
        if obj.mtime and now - obj.mtime < grace:
            young += 1
            continue
        if not dry_run:
            storage.delete(obj.path)
        deleted.append(digest)
        reclaimed += obj.size
    return GcReport(deleted, reclaimed, kept, young, dry_run)
