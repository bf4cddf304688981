"""What a commit checks against a gc running at the same time, before its ref moves.

A gc deletes shards no stored manifest lists once they are older than its grace period. A
commit's reused shards may be that old, and with a grace shorter than the commit took, its
uploaded ones too. So once the commit's manifest is stored (from then on a gc sees its shards
listed), the reused shards a since-removed manifest protected are touched, and every shard of
the new version is checked to still exist; a manifest over shards that are gone is deleted
again, so that no version is listed that no read can open (``publish.py``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from dload_arrow.errors import ConflictError
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import manifest_path, shard_path
from dload_arrow.store.refs import list_refs

if TYPE_CHECKING:
    from dload_arrow.store.publish import Uploaded

__all__ = ["check_stored", "touch_if_unprotected", "unstore"]


def touch_if_unprotected(storage: Storage, up: Uploaded) -> None:
    """Touch the reused shards left untouched because ``up.protected_by`` listed them, when
    that manifest was removed while the commit ran (called once this commit's manifest is
    stored: a gc that listed the manifests before then saw neither). A gc that already
    deleted one is caught by :func:`check_stored` next."""
    untouched = up.protected.intersection(up.reused)
    if not untouched or up.protected_by is None or storage.exists(
            manifest_path(up.name, up.protected_by)):  # still stored: gc keeps its shards
        return
    for digest in sorted(untouched):
        storage.touch(shard_path(digest))


def unstore(storage: Storage, manifest: Manifest, mine: bool) -> None:
    """Delete the manifest this commit stored (``mine``), unless a concurrent commit of the
    same samples published it meanwhile (a ref names it: then it is stored again)."""
    if mine:
        path = manifest_path(manifest.name, manifest.version)
        storage.delete(path)
        if any(r.version == manifest.version for r in list_refs(storage, manifest.name).values()):
            storage.put_if_absent(path, manifest.to_bytes())


def check_stored(storage: Storage, up: Uploaded, manifest: Manifest,
                 verb: str = "commit") -> None:
    """Every shard of the new version must still exist before the ref moves: a gc may have
    deleted a reused one, or (grace shorter than this commit took) an uploaded one. ``verb``
    names the action to run again (an append's rows must not be committed alone: QA
    concurrency62)."""
    new = {s.digest for s in up.shards} | set(up.reused)
    # the last key index part is the one this commit wrote (the others are its parent's)
    new.update(p["digest"] for p in manifest.key_index_parts[-1:])
    digests = sorted(new)
    with ThreadPoolExecutor(8) as pool:  # one HEAD each on S3: run them together
        found = list(pool.map(lambda d: storage.exists(shard_path(d)), digests))
    missing = [d for d, ok in zip(digests, found, strict=True) if not ok]
    if missing:
        reused = sum(d in up.reused for d in missing)
        raise ConflictError(
            f"{verb} to {up.name!r}: {len(missing)} shard(s) of the new version (first "
            f"{missing[0][:12]}; {reused} reused, {len(missing) - reused} uploaded by it) were "
            "deleted while it ran, by a gc running at the same time (one whose grace period "
            f"was shorter than this {verb} took); nothing was published (the ref did not move). "
            f"{verb.capitalize()} again: the missing shards will be uploaded"
        )
