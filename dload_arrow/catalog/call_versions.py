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
from dload_arrow.errors import NotFoundError
from dload_arrow.storage import Storage, redact_url
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.refs import read_ref

__all__ = ["check_stored", "resolve_calls"]

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


def check_stored(snapshot: Snapshot | None, storage: Storage, name: str, version: str) -> None:
    """Refuse a version the listing lacks: a local copy of a manifest may outlive the version
    in the root (rm), and the root's readers refuse it too."""
    if snapshot is not None and (name, version) not in snapshot.manifests:
        raise NotFoundError(
            f"version {version[:12]} of {name!r} is not stored under "
            f"{redact_url(storage.url)} (was it removed?); list them with "
            f"`dload versions {name}`"
        )
