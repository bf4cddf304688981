"""Removal of versions and datasets: the ``rm`` half of ``Repository``.

:class:`RemoveMixin` removes one version (its refs step back to the newest remaining version
or go, then its manifest) or a whole dataset (refs, then manifests; the log and the removal
records stay). Removal races other writers; each step that can lose a race is checked after
it, as a commit checks its own move (``store/publish.py``):

* **Two rms at once.** ``rm`` of v3 steps latest back to v2 while another ``rm`` removes v2:
  after the move, the fallback must still be stored, or latest steps on to the next remaining
  version. An rm of v2 that deletes its manifest after that check finds latest pointing back
  at it when it re-reads the refs, and restores it (ConflictError: rm again).
* **A commit of the removed version's samples** moving a ref back to it meanwhile: the same
  re-read restores the manifest (the commit wins; ConflictError).
* **A commit during** ``rm(name)``: it may move latest after rm deleted the refs and check its
  manifest before rm deletes it, so it reports success. rm reads the refs again at the end: a
  ref there means a commit won; its manifest is stored again and rm raises ConflictError.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import TYPE_CHECKING

from dload_arrow.errors import (
    ConflictError,
    DloadError,
    IntegrityError,
    NotFoundError,
    StorageError,
)
from dload_arrow.repository.gc import keep_for_readers
from dload_arrow.repository.strays import nested_folder, nested_folders
from dload_arrow.repository.tags import TagsMixin
from dload_arrow.store.names import manifest_path
from dload_arrow.store.refs import delete_ref, list_refs, move_ref, read_log, read_ref
from dload_arrow.store.removals import REMOVED, gone_hint, record_removal

if TYPE_CHECKING:
    from dload_arrow.repository.versions import VersionInfo
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest import Manifest
    from dload_arrow.store.manifest_cache import ManifestCache

__all__ = ["RemoveMixin"]


class RemoveMixin(TagsMixin):
    """``rm``; mixed into :class:`~dload_arrow.repository.Repository`."""

    storage: Storage
    manifests: ManifestCache

    if TYPE_CHECKING:  # provided by VersionsMixin and Repository

        def versions(self, name: str) -> list[VersionInfo]: ...

        def _stored_versions(self, name: str) -> tuple[list[VersionInfo], list[str]]: ...

        def resolve(self, name: str, version: str | None = None) -> str: ...

        def _version_ids(self, name: str) -> list[str]: ...

        def _missing(self, name: str) -> str: ...

    def rm(self, name: str, version: str | None = None) -> list[str]:
        """Remove a version, or the whole dataset; return the removed version ids.

        ``version`` may be an id, a prefix or a tag: the version it names is removed (to
        delete only a tag, :meth:`untag`). Shards stay until :meth:`gc`. Refs that pointed at
        a removed version are deleted, except ``latest``: it steps back to the version it
        pointed at before (the log), else to the newest remaining; derived
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
            return self._rm_all(name, ids, list(refs))
        vid = self.resolve(name, version)
        if vid not in ids and not any(r.version == vid for r in refs.values()):
            hint = gone_hint(self.storage, name, vid)
            raise NotFoundError(f"{name!r} has no stored version {vid[:12]}"
                                + (f": {hint}" if hint else ""))
        # A version already removed (by an rm that lost a race) may still have refs: they go
        stored = self._stored_versions(name)[0] if ids else []  # a corrupt one left out
        remaining = [v for v in stored if v.version != vid]
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
                self._fall_back(name, vid, self._fallback_order(name, remaining))
            else:
                delete_ref(self.storage, name, ref)
        if kept is not None:  # its parent edges outlive the manifest, for lineage
            record_removal(self.storage, name, vid, kept)  # (first: a root this user cannot
            with contextlib.suppress(DloadError):  # write fails here, QA errors61) a reader
                now = read_ref(self.storage, name, "latest")  # of it keeps gc's grace
                keep_for_readers(self.storage, [kept], set() if now is None else set(
                    self.manifests.get(name, now.version).digests()))
        try:
            self.storage.delete(manifest_path(name, vid))
        except StorageError as e:  # credentials that may write but not delete (QA readonly55)
            now = list_refs(self.storage, name).get("latest")
            raise StorageError(
                f"rm of {name!r} version {vid[:12]} is half done: {e}. Its refs have moved "
                f"(latest -> {now.version[:12] if now else 'none'}) and its removal is "
                "recorded, but its manifest stays; run the rm again with credentials that may "
                "delete to finish") from e
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
                f"(or another rm stepped latest back to it: {', '.join(back)} "
                f"point{'s' if len(back) == 1 else ''} at it), so it stays; rm again to remove "
                "it")
        return [vid]

    def _rm_all(self, name: str, ids: list[str], refs: list[str]) -> list[str]:
        """Remove every ref and manifest of ``name`` (its log and removal records stay)."""
        listed = (o.path for o in self.storage.list(f"datasets/{name}/"))
        for folder in nested_folders(listed)[:1]:  # (a backup moved into it: rm deleted its
            raise nested_folder(self.storage, folder, f"rm of {name!r} does not run (it "  # 65b)
                                "would delete them)")
        stored: dict[str, Manifest] = {}
        for vid in ids:
            with contextlib.suppress(DloadError):  # corrupt, gone or misnamed: no parents
                stored[vid] = self.manifests.get(name, vid)
        # the refs first: credentials that may not delete fail here, before anything is
        # recorded as removed (QA readonly55: `log` showed the live latest as removed)
        for ref in refs:
            delete_ref(self.storage, name, ref, moved_ok=True)  # moved meanwhile: gone too
        for vid, m in stored.items():  # lineage through them stays (store/removals.py)
            record_removal(self.storage, name, vid, m)  # (at once: an rm cut off from here
            # on is told as half done, not as a commit that never published: QA concurrency62)
        keep_for_readers(self.storage, stored.values(), set())  # readers get gc's grace
        kept_dirs = (f"datasets/{name}/log/", f"datasets/{name}/{REMOVED}/")
        manifests = f"datasets/{name}/manifests/"
        for obj in self.storage.list(f"datasets/{name}/"):
            if obj.path.startswith(kept_dirs):
                continue
            vid = obj.path[len(manifests):].removesuffix(".arrow")
            if obj.path.startswith(manifests) and vid not in stored:
                with contextlib.suppress(DloadError):  # stored since ids: kept to restore
                    stored[vid] = self.manifests.get(name, vid)
            self.storage.delete(obj.path)
        for vid in ids:
            self.manifests.forget(vid)
        self._clear_memos(name, None)
        # A commit that moved latest after the refs went, and checked its manifest before it
        # was deleted, reported success: its version stays (module docstring)
        back = list_refs(self.storage, name)
        if not back:
            return ids
        lost = []
        for vid in sorted({v.version for v in back.values()}):
            had = stored.get(vid)
            data = b"" if had is None else had.to_bytes()
            if data and hashlib.sha256(data).hexdigest() == vid:
                self.storage.put_if_absent(manifest_path(name, vid), data)
            elif not self.storage.exists(manifest_path(name, vid)):
                lost.append(vid[:12])
        where = ", ".join(f"{r} -> {v.version[:12]}" for r, v in sorted(back.items()))
        raise ConflictError(
            f"rm of dataset {name!r}: a commit published to it while rm ran ({where}), so "
            "the dataset stays with that version" + (
                f"; the manifest of {', '.join(lost)} was deleted before rm could keep it: "
                "commit that data again" if lost else "") + f"; run `dload rm {name}` again to "
            "remove it")

    def _fallback_order(self, name: str, remaining: list[VersionInfo]) -> list[str]:
        """The stored versions ``latest`` may step back to, best first: the ones it pointed
        at before, most recent first (the log's moves of it: a rollback to an earlier
        version counts as its latest use), then the other published ones (a ref, now or in
        the log, named them), newest first. A manifest no ref ever named is no candidate:
        another writer's commit in flight (which deletes it if its parent goes) or one that
        did not finish."""
        stored = {v.version for v in remaining}
        order: list[str] = []
        log = sorted(read_log(self.storage, name), key=lambda e: e.seq)
        for e in reversed([e for e in log if e.ref == "latest"]):
            for v in (e.version, e.previous):
                if v in stored and v not in order:
                    order.append(v)  # type: ignore[arg-type]
        named = {e.version for e in log} | {r.version for r in list_refs(self.storage,
                                                                         name).values()}
        return order + [v.version for v in remaining if v.version not in order
                        and v.version in named]

    def _fall_back(self, name: str, vid: str, remaining: list[str]) -> None:
        """Move ``latest`` from ``vid`` (being removed) to the first of ``remaining`` that is
        still stored, checking after each move: another rm may remove the fallback between
        the listing and the move (module docstring)."""
        current = vid
        for fallback in remaining:
            if not self.storage.exists(manifest_path(name, fallback)):
                continue  # removed since the listing
            try:
                move_ref(self.storage, name, "latest", fallback, action="rm", only_if=current)
            except ConflictError:  # a commit (or another rm) moved it: nothing to undo
                return
            if self.storage.exists(manifest_path(name, fallback)):
                return
            current = fallback  # removed just before or after the move: step further back
        if current != vid:
            raise ConflictError(
                f"rm of {name!r} version {vid[:12]}: another rm removed every version latest "
                f"could fall back to while it ran, so latest points at the removed "
                f"{current[:12]}; run `dload rm {name} --version {current} --yes`, then rm "
                f"{vid[:12]} again")
        delete_ref(self.storage, name, "latest")  # none remains: as when none was listed

    def _clear_memos(self, name: str, version: str | None) -> None:
        import json

        for obj in self.storage.list("derived/"):
            try:
                memo = json.loads(self.storage.read(obj.path))
            except (ValueError, NotFoundError):
                continue
            if memo.get("name") == name and version in (None, memo.get("version")):
                self.storage.delete(obj.path)
