"""``samples()`` calls resolved against the same state of the root as the catalog's views.

A query lists the root once (the snapshot: what the views ``datasets``, ``versions`` and
``refs`` show), then resolves each ``samples('<name>' [, '<version or tag>'])`` call. A commit
landing between the two moves a ref the snapshot has not seen: the call would read a version the
views do not list (a version committed a moment ago was reported as "not stored (was it
removed?)"), or one newer than the views' ``datasets`` row. So after resolving, the refs the
calls followed are read again; if one moved since the snapshot, the root is listed again and
the calls resolved again. After a few tries (a root committed to without a pause), a call
whose version is still newer than the listing reads the version its ref had in the listing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dload_arrow.catalog.samples_sql import SamplesCall
from dload_arrow.catalog.tables import Snapshot
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.refs import read_ref

__all__ = ["resolve_calls"]

TRIES = 3


def resolve_calls(calls: Sequence[SamplesCall], resolve: Callable[[str, str | None], Manifest],
                  snapshot: Snapshot, storage: Storage,
                  refresh: Callable[[], Snapshot] | None) -> list[Manifest]:
    """The manifest of each call, resolved as of ``snapshot`` where ``refresh`` can renew it."""
    manifests = [resolve(c.name, c.version) for c in calls]
    for _ in range(TRIES - 1):
        if refresh is None or _consistent(calls, manifests, snapshot, storage):
            return manifests
        snapshot = refresh()
        manifests = [resolve(c.name, c.version) for c in calls]
    return [_as_listed(c, m, snapshot) for c, m in zip(calls, manifests, strict=True)]


def _as_listed(call: SamplesCall, manifest: Manifest, snapshot: Snapshot) -> Manifest:
    """The last try: a version newer than the listing, reached through a ref the listing has,
    reads as the ref was then (the views' version) instead of being refused as not stored."""
    if (call.name, manifest.version) in snapshot.manifests:
        return manifest
    then = _refs(snapshot).get((call.name, call.version or "latest"))
    if then is None:
        return manifest
    return snapshot.manifests.get((call.name, str(then)), manifest)


def _consistent(calls: Sequence[SamplesCall], manifests: Sequence[Manifest],
                snapshot: Snapshot, storage: Storage) -> bool:
    if any((c.name, m.version) not in snapshot.manifests
           for c, m in zip(calls, manifests, strict=True)):
        return False
    refs = _refs(snapshot)
    followed = {(c.name, c.version or "latest") for c in calls} & refs.keys()  # (not ids)
    for name, ref in sorted(followed):
        now = read_ref(storage, name, ref)
        if (now.version if now is not None else None) != refs[(name, ref)]:
            return False
    return True


def _refs(snapshot: Snapshot) -> dict[tuple[str, str], Any]:
    table = snapshot.tables.get("dload_raw_refs")
    if table is None:
        return {}
    return {(r["name"], r["ref"]): r["version"] for r in table.select(
        ["name", "ref", "version"]).to_pylist()}
