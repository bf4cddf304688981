"""Garbage collection of shards that no manifest references."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

from dload_arrow.errors import NotFoundError
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
    # Local roots: temp files of writes cut off by a crash (``*.tmp-*``), older than grace.
    temp_files_removed: int = 0
    temp_bytes_reclaimed: int = 0


def referenced_digests(storage: Storage) -> set[str]:
    """Every shard digest referenced by any manifest of any dataset under the root."""
    refs: set[str] = set()
    for obj in storage.list("datasets/"):
        parts = obj.path.split("/")
        if len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow"):
            vid = parts[3][: -len(".arrow")]
            try:
                data = storage.read(obj.path)
            except NotFoundError:
                continue  # removed (rm) since the listing: its shards are unreferenced now
            # A corrupt manifest raises IntegrityError: gc stops rather than guess.
            refs.update(Manifest.from_bytes(data, vid).digests())
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
            # Stat again right before deleting: a commit reusing this shard touches it (and
            # its manifest may be newer than the ones read above), which makes it young.
            try:
                fresh = storage.info(obj.path)
            except NotFoundError:
                continue
            if fresh.mtime and time.time() - fresh.mtime < grace:
                young += 1
                continue
            storage.delete(obj.path)
        deleted.append(digest)
        reclaimed += obj.size
    temps = _stale_temp_files(storage, now - grace)
    if not dry_run:
        for path, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    return GcReport(
        deleted, reclaimed, kept, young, dry_run,
        temp_files_removed=len(temps), temp_bytes_reclaimed=sum(n for _, n in temps),
    )


def _stale_temp_files(storage: Storage, cutoff: float) -> list[tuple[str, int]]:
    """Temp files under a local root's ``shards/`` last written before ``cutoff``.

    A process killed mid-write leaves ``<name>.tmp-<uuid>`` next to the target; listings hide
    them, so only gc can clean them up. Remote stores have no such leftovers (a PUT is atomic).
    """
    base = storage.local_path("shards") if storage.is_local else None
    out: list[tuple[str, int]] = []
    if base is None:
        return out
    for dirpath, _dirs, files in os.walk(base):
        for fn in files:
            if ".tmp-" not in fn:
                continue
            full = os.path.join(dirpath, fn)
            try:
                st = os.stat(full)
            except FileNotFoundError:
                continue
            if st.st_mtime < cutoff:
                out.append((full, st.st_size))
    return out
