"""Removal of a version or of a whole dataset: the ``rm`` half of ``Repository``'s versions.

Refs move off a removed version (``latest`` back to the newest remaining one) before its
manifest goes; the removed version's parents are kept in a removal record
(:mod:`~dload_arrow.store.removals`) so that lineage walks through it. A version whose
manifest is corrupt is removed without being read: ``rm`` is the fix its error names.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import TYPE_CHECKING

from dload_arrow.errors import ConflictError, DloadError, IntegrityError, NotFoundError
from dload_arrow.repository.tags import TagsMixin
from dload_arrow.store.names import manifest_path
from dload_arrow.store.refs import delete_ref, list_refs, move_ref
from dload_arrow.store.removals import REMOVED, record_removal

if TYPE_CHECKING:
    from dload_arrow.repository.versions import VersionInfo
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest_cache import ManifestCache

__all__ = ["RemovalMixin"]


class RemovalMixin(TagsMixin):
    """``rm``; mixed into :class:`~dload_arrow.repository.Repository`."""

    storage: Storage
    manifests: ManifestCache

    if TYPE_CHECKING:  # provided by VersionsMixin and Repository

        def resolve(self, name: str, version: str | None = None) -> str: ...

        def _stored_versions(self, name: str) -> tuple[list[VersionInfo], list[str]]: ...

        def _version_ids(self, name: str) -> list[str]: ...

        def _missing(self, name: str) -> str: ...

    def rm(self, name: str, version: str | None = None) -> list[str]:
        """Remove a version, or the whole dataset; return the removed version ids.

        ``version`` may be an id, a prefix or a tag: the version it names is removed (to
        delete only a tag, :meth:`untag`). Shards stay until :meth:`gc`. Refs that pointed at
        a removed version move back to the newest remaining version or are deleted; derived
        memos of the dataset are cleared.
        Removing the whole dataset deletes its refs (each deletion logged) and manifests but
        keeps its log: who removed it, and when, stays on record (``log(name)``). Each removed
        version's parents stay on record too, so lineage walks through it
        (:mod:`~dload_arrow.store.removals`), unless its manifest is corrupt: it is removed
        without being read (that is the fix the error of every reader of it gives).
        """
        ids = self._version_ids(name)
        refs = list_refs(self.storage, name)  # may point at removed versions (a lost race)
        if not ids and not refs:
            raise NotFoundError(self._missing(name))
        if version is None:
            for vid in ids:  # lineage through them stays (store/removals.py)
                try:
                    m = self.manifests.get(name, vid)
                except DloadError:  # corrupt, gone or misnamed: no parents to keep
                    continue
                record_removal(self.storage, name, vid, m)
            for ref in refs:
                delete_ref(self.storage, name, ref)
            kept_dirs = (f"datasets/{name}/log/", f"datasets/{name}/{REMOVED}/")
            for obj in self.storage.list(f"datasets/{name}/"):
                if not obj.path.startswith(kept_dirs):
                    self.storage.delete(obj.path)
            for vid in ids:
                self.manifests.forget(vid)
            self._clear_memos(name, None)
            return ids
        vid = self.resolve(name, version)
        if vid not in ids and not any(r.version == vid for r in refs.values()):
            raise NotFoundError(f"{name!r} has no stored version {vid[:12]}")
        # A version already removed (by an rm that lost a race) may still have refs: they go
        remaining = [v for v in self._stored_versions(name)[0] if v.version != vid] if ids else []
        kept = None  # its manifest: for its removal record, and to undo below
        if vid in ids:
            with contextlib.suppress(IntegrityError):  # corrupt: removed unread (no record)
                kept = self.manifests.get(name, vid)
        # Refs first, the manifest last: an rm cut off half-way leaves refs on stored
        # manifests (an unreferenced one is harmless: rm again, or gc, sees it)
        for ref, value in list_refs(self.storage, name).items():
            if value.version != vid:
                continue
            if ref == "latest" and remaining:
                with contextlib.suppress(ConflictError):  # a commit moved it: nothing to undo
                    move_ref(self.storage, name, ref, remaining[0].version, action="rm",
                             only_if=vid)
            else:
                delete_ref(self.storage, name, ref)
        if kept is not None:  # its parent edges outlive the manifest, for lineage
            record_removal(self.storage, name, vid, kept)
        self.storage.delete(manifest_path(name, vid))
        self.manifests.forget(vid)
        self._clear_memos(name, vid)
        back = sorted(r for r, v in list_refs(self.storage, name).items() if v.version == vid)
        data = kept.to_bytes() if back and kept is not None else b""
        if data and hashlib.sha256(data).hexdigest() == vid:  # the bytes it was stored as
            # A commit of the same samples moved a ref back to it since the refs moved (its
            # own check for the manifest may have come before the delete): the commit wins
            self.storage.put_if_absent(manifest_path(name, vid), data)
            raise ConflictError(
                f"rm of {name!r} version {vid[:12]}: a commit published it again while rm ran "
                f"({', '.join(back)} point at it), so it stays; rm again to remove it")
        return [vid]

    def _clear_memos(self, name: str, version: str | None) -> None:
        import json

        for obj in self.storage.list("derived/"):
            try:
                memo = json.loads(self.storage.read(obj.path))
            except (ValueError, NotFoundError):
                continue
            if memo.get("name") == name and version in (None, memo.get("version")):
                self.storage.delete(obj.path)
