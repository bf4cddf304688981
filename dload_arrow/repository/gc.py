"""Garbage collection of shards that no manifest references."""

from __future__ import annotations

import os
import re
import time
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from dload_arrow.errors import (
    DloadError,
    IntegrityError,
    InvalidNameError,
    NotFoundError,
    StorageError,
    user_stacklevel,
)
from dload_arrow.repository.strays import (
    copied_folder,
    nested_folder,
    nested_folders,
    stray_folder,
)
from dload_arrow.storage import Storage, redact_url
from dload_arrow.storage.s3_uploads import abort_upload, open_uploads
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.manifest_cache import corrupt_manifest
from dload_arrow.store.names import is_digest, shard_path

__all__ = ["BATCH", "GcReport", "collect_garbage", "keep_for_readers", "referenced_digests"]


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
    # Objects under ``shards/`` that are not dload_arrow shards (a user's files): never
    # deleted; the first few paths, and how many.
    foreign: tuple[str, ...] = ()
    foreign_count: int = 0
    # S3 roots: multipart uploads of shards a killed commit left open (storage/s3_uploads.py),
    # started before the grace period: aborted, their parts' bytes freed.
    uploads_aborted: int = 0
    upload_bytes_reclaimed: int = 0


# What dload_arrow stores under shards/ (store.names.shard_path), and its local temp files.
_SHARD = re.compile(r"\Ashards/([0-9a-f]{2})/(\1[0-9a-f]{62})\.parquet\Z")
_TEMP = re.compile(r"\A[0-9a-f]{64}\.parquet\.tmp-[0-9a-f]+\Z")
# A local write's temp file of a manifest, ref, log entry or memo (storage/local.py)
_ANY_TEMP = re.compile(r"\A.+\.tmp-[0-9a-f]{32}\Z")
_FOREIGN_SHOWN = 5


_TOUCH_THREADS = 8


def keep_for_readers(storage: Storage, removed: Iterable[Manifest], kept: set[str]) -> int:
    """Touch the shards of removed versions that ``kept`` (what ``latest`` lists now) lacks;
    return how many. gc's grace counts from a shard's last write, and a removed version's
    shards were often written months before: ``rm`` then ``gc`` deleted them under a job
    reading that version mid-epoch (QA infer60). Touched, they stay for the grace period
    after the rm. One that cannot be touched (no write permission) is left as it was, warned
    of: the rm itself goes on."""
    digests = sorted({d for m in removed for d in m.digests()} - kept)
    failed: list[str] = []

    def touch(digest: str) -> None:
        try:
            storage.touch(shard_path(digest))
        except DloadError as e:
            why = getattr(e.__cause__, "strerror", None) or e  # (the touch, not a create)
            failed.append(f"{digest[:12]}: {why}")

    if len(digests) > 1 and not storage.is_local:
        with ThreadPoolExecutor(_TOUCH_THREADS) as pool:
            list(pool.map(touch, digests))
    else:
        for d in digests:
            touch(d)
    if failed:
        warnings.warn(
            f"rm could not restart gc's grace period for {len(failed)} of the removed "
            f"version's {len(digests)} shards ({failed[0]}): a job still reading that version "
            "may lose them to the next gc whose grace they are past; run gc with a grace "
            "longer than such jobs (a store that throttled the copies or credentials that may "
            "not write cause this)",
            stacklevel=user_stacklevel())
    return len(digests)


BATCH = 100
"""Candidates stat-ed, then checked against the manifests stored meanwhile, then deleted: at
least this many a batch, and an eighth of them (at most 9 listings of ``datasets/``, whose
objects include every log entry, however many candidates)."""


def referenced_digests(storage: Storage, seen: set[str] | None = None) -> set[str]:
    """Every shard digest referenced by any manifest of any dataset under the root.

    With ``seen`` (manifest paths already read), only the manifests not in it are read, and
    added to it: one listing finds the manifests stored since the last call.
    """
    refs: set[str] = set()
    listed = storage.list("datasets/")
    unread: tuple[str, ...] = getattr(storage, "unreadable", tuple)()
    if unread:  # a private dataset's manifests unseen: its shards would go (QA perms66)
        raise StorageError(
            f"gc does not run: {unread[0]!r} in root {redact_url(storage.url)} cannot be read "
            "by this user, so which shards it references cannot be told; make it "
            "readable to everyone who shares the root (chmod -R g+rX), or run gc as its owner")
    for folder in nested_folders(o.path for o in listed)[:1]:  # (the listing skips them)
        raise nested_folder(storage, folder, "gc does not run (its manifests may be the only "
                            "ones that reference some shards)")
    for obj in listed:
        parts = obj.path.split("/")
        if len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow"):
            if seen is not None:
                if obj.path in seen:
                    continue
                seen.add(obj.path)
            vid = parts[3][: -len(".arrow")]
            if not is_digest(vid):  # no dload manifest's name: not ours (QA hostile65:
                continue  # a stray zz.arrow stopped gc, and the rm it advised was refused)
            try:
                data = storage.read(obj.path)
            except InvalidNameError as e:  # its manifests may hold shards: gc cannot run
                raise stray_folder(storage, parts[1], "gc does not run (its manifests may be "
                                   "the only ones that reference some shards)") from e
            except NotFoundError:
                continue  # removed (rm) since the listing: its shards are unreferenced now
            try:
                refs.update(Manifest.from_bytes(data, vid).digests())
            except IntegrityError as e:  # gc stops rather than guess which shards it lists
                copy_of = copied_folder(storage, (o.path for o in listed), parts[1])
                if copy_of:  # a half-copied folder (its rm would fail: QA review64i)
                    raise stray_folder(storage, parts[1], "gc does not run", copy_of) from e
                raise corrupt_manifest(storage, parts[1], vid, e) from e
    return refs


def collect_garbage(storage: Storage, grace: float, dry_run: bool = False) -> GcReport:
    """Delete shards that no manifest references and that are older than ``grace`` seconds.

    Only dload_arrow's own objects under ``shards/`` (``<aa>/<sha256>.parquet``) are ever
    deleted; other files there are counted in the report (``foreign``) and left alone.

    The grace period protects a commit in progress, whose shards are stored before its
    manifest: keep it longer than your longest commit.
    """
    # List shards before reading manifests: a shard uploaded after the listing is not a
    # candidate, and a manifest stored after it only references shards we will see as young.
    listed = storage.list("shards/")
    shards = [o for o in listed if _SHARD.match(o.path)]
    foreign = [o.path for o in listed if not _SHARD.match(o.path)]
    seen: set[str] = set()
    refs = referenced_digests(storage, seen)
    now = time.time()
    candidates, young, kept = [], 0, 0
    for obj in shards:
        if _digest(obj.path) in refs:
            kept += 1
        elif obj.mtime and now - obj.mtime < grace:
            young += 1
        else:
            candidates.append(obj)
    if dry_run:
        deleted = candidates
    else:
        deleted = []
        size = max(BATCH, -(-len(candidates) // 8))
        for start in range(0, len(candidates), size):
            # Stat-ed again (a commit reusing a shard touches it, which makes it young), then
            # the manifests stored since the last read are read: a commit that took longer
            # than the grace period may have stored its manifest and checked its shards.
            batch = []
            for obj in candidates[start : start + size]:
                state = _state(storage, obj.path, grace)
                young += state == "young"
                if state == "old":
                    batch.append(obj)
            refs |= referenced_digests(storage, seen)
            for obj in batch:
                if _digest(obj.path) in refs:
                    kept += 1
                    continue
                # Once more right before the delete: a shard that a version removed meanwhile
                # protected is touched by the commit reusing it only after it stored its
                # manifest, which may be after the listing above.
                state = _state(storage, obj.path, grace)
                if state == "old":
                    storage.delete(obj.path)
                    deleted.append(obj)
                young += state == "young"
    temps = _stale_temp_files(storage, now - grace)
    uploads = open_uploads(storage, "shards/", now - grace)
    if not dry_run:
        kept_temps = []
        for path, n in temps:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except PermissionError:  # another user's, in a folder this user may not write
                kept_temps.append((path, n))  # (QA perms66: gc stopped, its report lost)
        if kept_temps:
            temps = [t for t in temps if t not in kept_temps]
            warnings.warn(f"gc left {len(kept_temps)} stale temp file(s) it may not delete "
                          f"(first: {kept_temps[0][0]}): deleting needs write permission on "
                          "the folder that holds them; their owner, or a user with it, can "
                          "run gc again", stacklevel=user_stacklevel())
        for upload in uploads:
            abort_upload(storage, upload)
    return GcReport(
        [_digest(o.path) for o in deleted], sum(o.size for o in deleted), kept, young, dry_run,
        temp_files_removed=len(temps), temp_bytes_reclaimed=sum(n for _, n in temps),
        foreign=tuple(foreign[:_FOREIGN_SHOWN]), foreign_count=len(foreign),
        uploads_aborted=len(uploads), upload_bytes_reclaimed=sum(u.bytes for u in uploads),
    )


def _digest(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".")[0]


def _state(storage: Storage, path: str, grace: float) -> str:
    """``"old"``, ``"young"`` (touched within ``grace``) or ``"gone"``: a shard stat-ed again."""
    try:
        fresh = storage.info(path)
    except NotFoundError:
        return "gone"
    return "young" if fresh.mtime and time.time() - fresh.mtime < grace else "old"


def _stale_temp_files(storage: Storage, cutoff: float) -> list[tuple[str, int]]:
    """Temp files under a local root's ``shards/``, ``datasets/`` and ``derived/`` last
    written before ``cutoff``.

    A process killed mid-write leaves ``<name>.tmp-<uuid>`` next to the target (a manifest's
    too: QA killresume62); listings hide them, so only gc can clean them up. Remote stores
    have no such leftovers (a PUT is atomic).
    """
    out: list[tuple[str, int]] = []
    for top, pattern in (("shards", _TEMP), ("datasets", _ANY_TEMP), ("derived", _ANY_TEMP)):
        base = storage.local_path(top) if storage.is_local else None
        if base is not None:
            out += _temps_in(base, pattern, cutoff)
    return out


def _temps_in(base: str, pattern: re.Pattern[str], cutoff: float) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for dirpath, _dirs, files in os.walk(base):
        for fn in files:
            if not pattern.match(fn):  # (a user's file there stays)
                continue
            full = os.path.join(dirpath, fn)
            try:
                st = os.stat(full)
            except FileNotFoundError:
                continue
            if st.st_mtime < cutoff:
                out.append((full, st.st_size))
    return out
