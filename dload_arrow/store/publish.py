"""The last steps of a commit: the manifest over the uploaded shards, then the ref.

A commit's shards are uploaded first (``commit.py``); this builds the manifest that lists them
(after the parent's shards, for an append), stores it, and moves ``latest``.

**Appends race.** An append moves ``latest`` only while it still points at the parent it was
built on (``move_ref(only_if=parent)``): moving it unconditionally dropped what another writer
published meanwhile. When it has moved, the append is *rebased*: a manifest over the new
``latest``'s shards (its own are stored already), its keys checked again, the move retried. The
manifest of the lost race is deleted only once the rebased one is stored: a gc always finds
this append's shards listed by one of them.

**The parent may be removed while the append runs** (``rm`` of that version, then ``gc``
deleting shards no manifest lists). The new manifest is stored before the parent is checked:
from then on a gc sees the parent's shards listed by one manifest or the other, so if the
parent manifest still exists at the check, none of its shards can have been deleted; if it is
gone, the append publishes nothing and says so.

**Reused shards and gc.** A stored shard is not uploaded again. One no manifest lists may be
old enough for gc to delete while this commit runs, so it is touched (its grace restarts). One
the dataset's stored latest version (or an append's parent) lists is protected by that
manifest and not written at all (the same commit twice sends no PUT), unless that manifest is
removed before this one is stored: then it is touched. Before the ref moves, every shard of the
new version is checked to still exist (a gc whose grace is shorter than the commit took could
have deleted an uploaded one too). An append given no ``meta`` or ``recipe`` keeps those of
the version it is finally built on.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from dload_arrow.errors import ConflictError, NotFoundError, SchemaError
from dload_arrow.storage import Storage
from dload_arrow.store.gc_race import check_stored, touch_if_unprotected, unstore
from dload_arrow.store.key_index import (
    KeyReader,
    build_part,
    check_unique,
    memoized,
    overlapping_shards,
    part_info,
    plan_index,
    stored_keys_from,
)
from dload_arrow.store.manifest import Manifest, build_manifest, shard_rows
from dload_arrow.store.names import manifest_path, shard_path
from dload_arrow.store.refs import RefValue, move_ref, read_ref
from dload_arrow.store.replaced import moved_error, warn_replaced
from dload_arrow.store.shard import ShardData, digest_of

__all__ = ["REBASES", "Uploaded", "crash_point", "publish", "store_manifest", "upload_shard"]

REBASES = 20
"""Times an append is rebased onto a moved ``latest`` before it gives up (ConflictError)."""

Rebase = Callable[[], Manifest]


@dataclass
class Uploaded:
    """What the upload step of a commit produced."""

    name: str
    schema: pa.Schema
    shards: list[ShardData]
    keys: list[pa.Array]  # the new samples' keys, by batch
    settings: dict[str, Any]
    uploaded: list[int] = field(default_factory=lambda: [0, 0])  # shards, bytes
    manifest_bytes: int = 0  # of uploaded[1]: the manifest (0 when it was stored already)
    protected_by: str | None = None  # the version whose manifest lists ``protected``
    protected: frozenset[str] = frozenset()
    reused: list[str] = field(default_factory=list)  # digests already stored (touched)
    seen: str | None = None  # a commit's: ``latest`` when it started (``replaced.py``)
    if_latest: str | None = None  # a commit's: publish only while latest is this version


def crash_point(step: str) -> None:
    """Test hook for invariant 1: SIGKILL this process at a named step of the protocol."""
    if os.environ.get("DLOAD_CRASH_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)


def upload_shard(storage: Storage, shard: ShardData,
                 protected: frozenset[str] = frozenset()) -> int:
    """Store ``shard`` unless it is there; bytes uploaded (0: reused).

    Hashes it first when ``write_shards`` left that to this (upload) thread. A stored copy of
    another size is damaged (a write cut off by a crash or power loss) and is replaced. A
    reused shard that no manifest in ``protected`` lists is touched (module docstring)."""
    if not shard.digest:
        shard.digest = digest_of(shard.data)
    path = shard_path(shard.digest)
    try:
        stored: int | None = storage.info(path).size
    except NotFoundError:
        stored = None
    if stored == shard.nbytes:
        # A reused shard may be old and unreferenced (left by a removed version): touching it
        # restarts gc's grace period. One listed by a stored manifest of this dataset is
        # protected by that manifest (no write at all: recommitting sends no PUT).
        if shard.digest in protected or storage.touch(path):
            return 0
    elif stored is not None:
        storage.write(path, bytes(shard.data))  # same digest, wrong size: replace it
        return shard.nbytes
    if storage.put_if_absent(path, memoryview(shard.data)):  # no copy to a local root
        return shard.nbytes
    storage.touch(path)  # stored meanwhile by a concurrent commit of the same bytes
    return 0


def store_manifest(storage: Storage, manifest: Manifest) -> int:
    """Write the manifest if absent; return the bytes written (0 when it was already there)."""
    data = manifest.to_bytes()
    path = manifest_path(manifest.name, manifest.version)
    if storage.exists(path):
        return 0
    return len(data) if storage.put_if_absent(path, data) else 0


def _latest(storage: Storage, name: str) -> str | None:
    ref = read_ref(storage, name, "latest")
    return None if ref is None else ref.version


def publish(storage: Storage, up: Uploaded, *, parent: Manifest | None,
            read_keys: KeyReader | None, rebase: Rebase | None, meta: dict[str, Any] | None,
            recipe: str | None, parents: list[dict[str, Any]], move: bool,
            action: str = "commit") -> Manifest:
    """Store the manifest of ``up`` (after ``parent``'s shards), move ``latest`` (logged as
    ``action``, or append); an append whose parent is no longer ``latest`` is rebased."""
    read_keys = None if read_keys is None else memoized(read_keys)
    stale: list[str] = []  # the manifest of a lost race, kept until a rebased one is stored
    try:
        for attempt in itertools.count():
            known = None
            if parent is not None:
                assert read_keys is not None, "an append needs read_keys"
                near = overlapping_shards(parent, up.keys)  # only these can hold a duplicate
                known = read_keys(parent, near) if near else None
            try:
                check_unique(up.keys, known, up.name)
            except SchemaError as e:
                if attempt == 0:
                    raise
                raise ConflictError(
                    f"append to {up.name!r}: another append published rows meanwhile whose "
                    f"keys collide with this one's ({e}); nothing was published. A table "
                    "without key= is numbered from the row count when its append starts: "
                    "append it again, or give its rows their own keys"
                ) from e
            wrote, manifest = _manifest(storage, up, parent, read_keys, meta, recipe, parents)
            path = manifest_path(up.name, manifest.version)
            mine = bool(wrote) or path in stale  # stored by this append (now or before)
            for old in set(stale) - {path}:  # the rebased manifest lists its shards now
                storage.delete(old)
            stale.clear()
            touch_if_unprotected(storage, up)
            try:  # a manifest of shards that are gone: versions() must not list it
                check_stored(storage, up, manifest, action if parent is None else "append")
            except ConflictError:
                unstore(storage, manifest, mine)
                raise
            if parent is not None and not storage.exists(manifest_path(up.name,
                                                                       parent.version)):
                unstore(storage, manifest, mine)  # it lists shards gc may have deleted
                raise ConflictError(
                    f"append to {up.name!r}: the version it extends ({parent.version[:12]}) "
                    "was removed while it ran; nothing was published. Append again")
            crash_point("manifest")  # stored, the ref not moved yet
            if not move:
                return manifest
            try:
                # A commit of identical samples is the same version: a no-op. An append that
                # finds latest already at its version raced an identical append (the same rows
                # numbered from the same count): taken as its own, the second append's rows
                # were lost (QA ops56); it is rebased, and refused for its colliding keys.
                rep: list[RefValue | None] = []
                move_ref(storage, up.name, "latest", manifest.version,
                         unless_there=parent is None,
                         action="append" if parent is not None else action,
                         only_if=up.if_latest if parent is None else parent.version,
                         replaced=rep)
                if not storage.exists(path):
                    _removed_meanwhile(storage, up, manifest)
                if parent is None and rep and rep[0] is not None and rep[0].version != up.seen:
                    warn_replaced(up.name, up.seen, rep[0].version, manifest.version, action,
                                  seen_removed=up.seen is not None and not storage.exists(
                                      manifest_path(up.name, up.seen)))
                return manifest
            except ConflictError as e:
                if parent is None and up.if_latest is not None:
                    unstore(storage, manifest, mine)  # no version of a refused commit listed
                    raise moved_error(up.name, up.if_latest, _latest(storage, up.name),
                                      True) from None
                # built on a parent no longer latest: no one may open it, but it keeps this
                # append's shards from gc until rebased (unless another writer published it)
                if mine and _latest(storage, up.name) != manifest.version:
                    stale.append(path)
                if rebase is None:
                    raise  # a commit that lost every compare-and-swap: move_ref says so
                if attempt >= REBASES:
                    raise ConflictError(
                        f"append to {up.name!r}: latest kept moving while it ran "
                        f"({attempt + 1} tries); nothing was published. Append again") from e
            try:
                parent = rebase()
            except NotFoundError as e:
                raise ConflictError(f"append to {up.name!r}: the dataset was removed while it "
                                    "ran; nothing was published") from e
            if not up.schema.equals(parent.schema):
                raise ConflictError(
                    f"append to {up.name!r}: latest moved to a version with another schema "
                    f"({parent.schema}) while it ran; nothing was published")
            parents = [dict(p, version=parent.version) if p.get("relation") == "append"
                       else p for p in parents]
    finally:
        for path in stale:  # a rebase that failed: nothing may remain of it
            storage.delete(path)
    raise AssertionError("unreachable")


def _manifest(storage: Storage, up: Uploaded, parent: Manifest | None,
              read_keys: KeyReader | None, meta: dict[str, Any] | None, recipe: str | None,
              parents: list[dict[str, Any]]) -> tuple[int, Manifest]:
    """The manifest built and stored, and the bytes written (0: it was there already)."""
    shards, schema = up.shards, up.schema
    if parent is not None:  # an append without meta / recipe keeps its parent's
        meta = parent.meta if meta is None else meta
        recipe = parent.recipe if recipe is None else recipe
    rows = shard_rows(shards, schema)
    sorted_new = all(s.keys_sorted for s in shards) and all(
        a.key_max < b.key_min for a, b in itertools.pairwise(shards)
    )
    if parent is not None:
        # A parent written before the manifest counted nulls of non-scalar columns lacks
        # those columns: its shards get null there (unknown), not an error.
        rows = pa.concat_tables([parent.table.replace_schema_metadata(None), rows],
                                promote_options="default")
        tail = parent.shards[-1].key_max if parent.shards else None
        sorted_new = sorted_new and parent.keys_sorted and (
            tail is None or not shards or tail < shards[0].key_min
        )
    index: list[dict[str, Any]] = []
    if not sorted_new and rows.num_rows:
        index = _key_index(storage, up, parent, read_keys)
    manifest = build_manifest(
        up.name, schema, rows, keys_sorted=sorted_new, meta=meta, recipe=recipe,
        parents=parents, key_index=index, settings=up.settings,
    )
    wrote = store_manifest(storage, manifest)
    up.uploaded[1] += wrote
    up.manifest_bytes = wrote
    return wrote, manifest


def _removed_meanwhile(storage: Storage, up: Uploaded, manifest: Manifest) -> None:
    """The manifest is gone just after ``latest`` moved to it: an rm of this version (the same
    samples committed before) ran between the store and the move, or after the move. While
    latest still points here, the commit wins: storing the same bytes restores exactly this
    version (the id is their hash). Once rm has moved latest away, rm wins: ConflictError."""
    ref = read_ref(storage, up.name, "latest")
    if ref is None or ref.version != manifest.version:
        raise ConflictError(
            f"commit to {up.name!r}: version {manifest.version[:12]} was removed (rm) just "
            "as it was published, and latest moved away from it; commit again to publish it")
    store_manifest(storage, manifest)
    check_stored(storage, up, manifest)


def _key_index(storage: Storage, up: Uploaded, parent: Manifest | None,
               read_keys: KeyReader | None) -> list[dict[str, Any]]:
    """The new version's key index parts: the parent's it keeps, then one written for the
    rows after them (``key_index.plan_index``), uploaded here (its bytes count as uploaded)."""
    kept, start = plan_index(parent, sum(len(k) for k in up.keys))
    keys = list(up.keys)
    if parent is not None and start < parent.num_rows:
        assert read_keys is not None, "an append needs read_keys"
        stored = stored_keys_from(parent, read_keys, start)
        keys = ([stored] if stored is not None else []) + keys
    part = build_part(keys, start)
    wrote = upload_shard(storage, part)
    up.uploaded[1] += wrote  # bytes count; shards_uploaded is data shards
    if not wrote:
        up.reused.append(part.digest)
    return [*kept, part_info(part)]
