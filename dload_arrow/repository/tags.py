"""Tags of a dataset: names that point at one of its versions (``v1``, ``best``), moved and
deleted by the user, each move and deletion recorded in the dataset's log. ``latest`` is
managed by commits."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from dload_arrow.errors import InvalidNameError, NotFoundError
from dload_arrow.store.names import check_name, check_ref, manifest_path, not_portable
from dload_arrow.store.refs import RefValue, delete_ref, move_ref, read_ref

if TYPE_CHECKING:
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest import Manifest
    from dload_arrow.store.manifest_cache import ManifestCache

__all__ = ["TagsMixin"]


class TagsMixin:
    """``tag`` and ``untag``; mixed into :class:`~dload_arrow.repository.Repository`."""

    storage: Storage
    manifests: ManifestCache

    if TYPE_CHECKING:  # provided by Repository

        def manifest(self, name: str, version: str | None = None) -> Manifest: ...

    def tag(self, name: str, version: str, tag: str) -> str:
        """Point tag ``tag`` of ``name`` at ``version``; return the version id.

        ``latest`` is managed by commits; it is taken here only to restore a lost ``latest``
        ref object, at the version the dataset's log says it last pointed at."""
        return self.tag_replacing(name, version, tag)[0]

    def tag_replacing(self, name: str, version: str, tag: str) -> tuple[str, str | None]:
        """:meth:`tag`, and the version the tag pointed at just before this move (None: it
        was new), as the move itself found it (not read beforehand: a tag moved by someone
        else meanwhile is reported as what this move replaced)."""
        if check_ref(tag) == "latest":
            return self._restore_latest(name, version), None
        if all(c in "0123456789abcdefABCDEF" for c in tag):
            # NAME@<tag> would then shadow the versions whose ids start with it
            raise InvalidNameError(f"tag {tag!r} reads like a version id prefix (hex digits "
                                   "only); choose a name with another letter, e.g. 'v1'")
        if why := not_portable(tag):
            raise InvalidNameError(f"tag {tag!r} is not allowed: {why}; choose another name, "
                                   "e.g. 'v1'")
        self._refuse_case_twin(name, tag)
        vid = self.manifest(name, version).version
        if not self.storage.exists(manifest_path(name, vid)):  # removed since it was cached
            self._removed(name, vid)
        replaced: list[RefValue | None] = []
        move_ref(self.storage, name, tag, vid, action="tag", unless_there=True,  # (no-op: no
                 replaced=replaced)  # log)
        # An rm of the version may have run since the check, its ref re-read before the move
        # (as a commit checks its own move): the tag goes again. An rm deleting the manifest
        # after this check sees the tag at its own re-read and keeps the version.
        if not self.storage.exists(manifest_path(name, vid)):
            now = read_ref(self.storage, name, tag)
            if now is not None and now.version == vid:
                delete_ref(self.storage, name, tag)
            self._removed(name, vid, f" while tag {tag!r} was moved to it, so the tag was "
                                     "deleted again")
        before = replaced[0] if replaced else None
        return vid, None if before is None else before.version

    def _refuse_case_twin(self, name: str, tag: str) -> None:
        """Refuse a tag that differs from ``latest`` or another tag of ``name`` only in case: on
        a case-insensitive filesystem (macOS, Windows) both are one ref file, and moving one
        moves the other (``Latest`` would move ``latest``)."""
        prefix = f"datasets/{check_name(name)}/refs/"
        refs = ["latest"] + [o.path[len(prefix):] for o in self.storage.list(prefix)]
        twin = next((r for r in refs if r != tag and r.lower() == tag.lower()), None)
        if twin is not None:
            raise InvalidNameError(
                f"tag {tag!r} differs from {twin!r} of {name!r} only in case: on a "
                "case-insensitive filesystem (macOS, Windows) they are one file, so moving one "
                "would move the other; choose another name" + ("" if twin == "latest" else
                f" (or delete {twin!r}: `dload tag {name} {twin} --delete`, repo.untag)"))

    def _restore_latest(self, name: str, version: str) -> str:
        """Create the missing ``latest`` ref of ``name`` at ``version``, when its log's last
        move of ``latest`` published that version and its manifest is stored."""
        from dload_arrow.store.refs import read_log

        moves = [e for e in read_log(self.storage, name) if e.ref == "latest"]
        last = moves[-1] if moves else None
        ref = read_ref(self.storage, name, "latest")
        if (ref is not None or last is None or last.action == "delete" or not last.version
                or not last.version.startswith(version.lower()) or len(version) < 4
                or not self.storage.exists(manifest_path(name, last.version))):
            raise InvalidNameError(
                "'latest' is managed by commits; choose another tag name (it is taken only to "
                "restore a lost latest ref, at the version its log names: `dload log "
                f"{name}`). To make an older version latest again, remove the newer versions "
                f"(`dload rm {name} --version VERSION`), or commit its data again with its "
                f"meta, recipe and parents (v = repo.dataset({name!r}, 'VERSION'); "
                f"repo.commit({name!r}, v, meta=v.meta, recipe=v.recipe, parents=v.parents) "
                "with its shard_size and row_group_size if it was given them: the same id "
                "comes back, nothing uploaded; a derived one: run its derive "
                f"again); to read an older one, pin it (`dload pin {name}@VERSION`) or tag it")
        move_ref(self.storage, name, "latest", last.version, action="restore",
                 only_if_absent=True)
        return last.version

    def _removed(self, name: str, vid: str, how: str = "") -> NoReturn:
        self.manifests.forget(vid)
        raise NotFoundError(f"{name!r} has no stored version {vid[:12]} (it was removed"
                            f"{how}); list them with `dload versions {name}`")

    def untag(self, name: str, tag: str) -> str:
        """Delete tag ``tag`` of ``name`` (the version stays); return the id it pointed at.

        ``rm(name, tag)`` removes the version a tag names; this removes only the name.
        """
        if check_ref(tag) == "latest":
            raise InvalidNameError("'latest' is managed by commits; rm removes versions")
        ref = read_ref(self.storage, name, tag)
        if ref is None:
            raise NotFoundError(f"{name!r} has no tag {tag!r}; repo.refs({name!r}) (or "
                                f"`dload info {name}`) lists its tags")
        delete_ref(self.storage, name, tag)
        return ref.version
