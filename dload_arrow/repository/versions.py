"""Versions, refs and pins of a dataset: the version half of ``Repository``.

:class:`VersionsMixin` holds the methods that list a dataset's stored versions, move its tags
and pin it in ``dload.lock``; it inherits ``rm`` (``remove.py``) and ``tag`` / ``untag``
(``tags.py``). :class:`~dload_arrow.repository.Repository`
inherits them. They reach the root through the facade's ``storage``, ``manifests`` and its
resolving methods, declared here for the type checker only.
"""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING

from dload_arrow.errors import (
    ConfigError,
    DloadError,
    IntegrityError,
    InvalidNameError,
    NotFoundError,
    StorageError,
    user_stacklevel,
)
from dload_arrow.repository.commit_guard import CommitGuardMixin
from dload_arrow.repository.diff import DiffMixin
from dload_arrow.repository.lock import (
    editing,
    lock_path,
    pinned_version,
    read_lock,
    unused_script_lock,
    write_lock,
)
from dload_arrow.repository.missing import (
    dangling_refs,
    elsewhere,
    refuse_new_name,
    removed_dataset,
    unknown_dataset,
    unreadable_dataset,
)
from dload_arrow.repository.remove import RemoveMixin
from dload_arrow.repository.version_info import VersionInfo
from dload_arrow.storage import redact_url
from dload_arrow.store.folder_hints import FolderCopyError
from dload_arrow.store.names import check_name, check_ref, is_digest, manifest_path
from dload_arrow.store.refs import LogEntry, list_refs, read_log, read_ref
from dload_arrow.store.removals import gone_hint

if TYPE_CHECKING:
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest import Manifest
    from dload_arrow.store.manifest_cache import ManifestCache

__all__ = ["VersionInfo", "VersionsMixin"]

_WARNED: set[str | None] = {None}  # script lock warnings given by this process

class VersionsMixin(RemoveMixin, DiffMixin, CommitGuardMixin):
    """Versions, refs and pins (removal: ``remove.py``, diff: ``diff.py``); mixed into
    :class:`Repository`."""

    storage: Storage
    manifests: ManifestCache

    if TYPE_CHECKING:  # provided by Repository

        def manifest(self, name: str, version: str | None = None) -> Manifest: ...

        def datasets(self) -> list[str]: ...

    def _version_ids(self, name: str) -> list[str]:
        """Ids of every manifest stored under ``name`` (published or not), unordered."""
        return list(self._stored_times(name))

    def _stored_times(self, name: str) -> dict[str, float]:
        """Each manifest stored under ``name`` by id, with the time it was stored."""
        prefix = f"datasets/{check_name(name)}/manifests/"
        stored = {o.path[len(prefix): -len(".arrow")]: o.mtime
                  for o in self.storage.list(prefix)}
        return {v: t for v, t in stored.items() if is_digest(v)}  # (a stray zz.arrow: 65)

    def _missing(self, name: str) -> str:
        """The error text for a ``name`` this root holds no version of (missing.py)."""
        try:  # manifests no ref points at: a commit that stored its manifest, then stopped
            left = self._version_ids(name)
        except InvalidNameError:
            left = []
        where = redact_url(self.storage.url)
        return (unreadable_dataset(self.storage, name, where)  # (not "rm it": QA review66d)
                or (not left and dangling_refs(self.storage, name, where))
                or removed_dataset(self.storage, name, where, left=left)
                or unknown_dataset(name, self.datasets(), where, unpublished=len(left))
                + self._a_version(name))

    def _a_version(self, name: str) -> str:
        """`` '3f2a9c' is a version of 'photos': photos@3f2a9c`` when ``name`` is one (a bare id
        given where a dataset is named: QA lineage64), else ''."""
        if not re.fullmatch(r"[0-9a-f]{4,64}", name):
            return ""
        try:
            owner, _ = self.find_version(name)
        except DloadError:
            return ""
        return f" {name!r} is a version of {owner!r}: name it {owner}@{name}"

    def versions(self, name: str) -> list[VersionInfo]:
        """Every stored version of ``name``, newest first: by the last time ``latest`` moved
        to it (the ref log), else by when its manifest was stored (a commit in flight). A
        version whose manifest is corrupt is left out with a warning naming it and the fix."""
        out, bad = self._stored_versions(name)
        for error in bad:
            warnings.warn(f"left out a version of {name!r}: {error}",
                          stacklevel=user_stacklevel())
        return out

    def _stored_versions(self, name: str) -> tuple[list[VersionInfo], list[str]]:
        """:meth:`versions`, and the errors of those whose manifest is corrupt."""
        stored = self._stored_times(name)
        ids = list(stored)
        if not ids:
            raise NotFoundError(self._missing(name))
        first_seen: dict[str, tuple[float, str]] = {}
        latest: dict[str, float] = {}  # the last time latest moved to each version
        for e in read_log(self.storage, name):
            if e.version and e.version not in first_seen:
                first_seen[e.version] = (e.time, e.user)
            if e.version and e.ref == "latest":
                latest[e.version] = max(latest.get(e.version, e.time), e.time)
        refs: dict[str, list[str]] = {}
        for ref, value in list_refs(self.storage, name).items():
            refs.setdefault(value.version, []).append(ref)
        out, bad = [], []
        for vid in ids:
            try:
                m = self.manifests.get(name, vid)  # listed: no existence check of its own
            except NotFoundError:  # removed since the listing (rm, an append's stale one)
                if self.storage.exists(manifest_path(name, vid)):
                    raise
                continue
            except IntegrityError as e:  # one bad object must not hide the others, nor rm
                bad.append(str(e))
                continue
            t, user = first_seen.get(vid, (None, None))
            out.append(VersionInfo(
                name=name, version=vid, num_rows=m.num_rows, num_bytes=m.num_bytes,
                num_shards=m.table.num_rows, time=t, user=user,
                refs=tuple(sorted(refs.get(vid, []))),
                parents=tuple(p["version"] for p in m.parents),
            ))
        # (a commit in flight listed last: rm of versions()[N:] lost its rows, QA threads66; a
        # commit of old data again, latest moved back to it, not first: QA review66d)
        return sorted(out, key=lambda v: (latest.get(v.version, stored[v.version]),
                                          v.version), reverse=True), bad

    def resolve(self, name: str, version: str | None = None) -> str:
        """A version id from an id, a unique id prefix, a tag, the lock file, or ``latest``."""
        check_name(name)
        if version is not None and not isinstance(version, str):
            raise ConfigError(f"version must be a str (an id, id prefix or tag), got "
                              f"{type(version).__name__} {version!r}")
        if version is not None and not version.strip():
            raise ConfigError(f"version {version!r} is empty (an unset variable?): leave it out "
                              "(None in Python) for the latest, or give a version id, id prefix "
                              "or tag")
        if version is None:
            lock = lock_path()  # one lookup up the tree per resolve (QA review58b: speed)
            pinned = None if lock is None else pinned_version(name, lock)
            if pinned is not None:
                return pinned
            if lock is None and (unused := unused_script_lock(name)) not in _WARNED:
                _WARNED.add(unused)  # (once a process: every read resolves the name)
                if unused is not None:
                    warnings.warn(unused, stacklevel=user_stacklevel())
            ref = read_ref(self.storage, name, "latest")
            if ref is None:
                raise NotFoundError(self._missing(name))
            return ref.version
        if len(version) == 64 and all(c in "0123456789abcdef" for c in version):
            return version
        try:
            ref = read_ref(self.storage, name, check_ref(version))
        except InvalidNameError:
            ref = None
        if ref is not None:
            return ref.version
        ids = self._version_ids(name)
        matches = [v for v in ids if v.startswith(version.lower())]
        if len(matches) == 1:
            return matches[0]
        if not matches:  # no version at all: the name is the mistake, not the version
            if version == "latest" or not ids:
                raise NotFoundError(self._missing(name))
            gone = gone_hint(self.storage, name, version) or elsewhere(self, name, version)
            raise NotFoundError(f"{name!r} has no version or tag {version!r}" + (
                f": {gone}" if gone else f"; list them with `dload versions {name}`"))
        raise NotFoundError(
            f"version prefix {version!r} of {name!r} is ambiguous ({len(matches)} versions "
            "start with it); give more characters"
        )

    def find_version(self, version: str) -> tuple[str, str]:
        """``(dataset name, full version id)`` of a version id or unique id prefix (4+ hex
        digits) of any dataset of the root (``dload diff V1 V2`` needs no names), or of
        ``NAME@VERSION`` (a tag, id or prefix of that dataset)."""
        if isinstance(version, str) and "@" in version:
            return (name := version.partition("@")[0]), self.resolve(
                name, version.partition("@")[2] or None)
        v = version.lower() if isinstance(version, str) else ""
        if len(v) < 4 or any(c not in "0123456789abcdef" for c in v):
            raise InvalidNameError(
                f"{version!r} is not a version id or id prefix (4 to 64 hex digits); give "
                "NAME@VERSION to name a tag or a version of one dataset")
        found = []
        for obj in self.storage.list("datasets/"):
            parts = obj.path.split("/")
            if (len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow")
                    and parts[3].startswith(v)):
                found.append((parts[1], parts[3][: -len(".arrow")]))
        if len(found) == 1:
            return found[0]
        if not found:
            raise NotFoundError(f"no version {version!r} in any dataset of this root; list "
                                "them with `dload versions NAME`")
        shown = ", ".join(f"{n}@{i[:12]}" for n, i in sorted(found)[:5])
        raise NotFoundError(f"version prefix {version!r} is ambiguous ({len(found)} versions "
                            f"start with it: {shown}); give more characters")

    # --- refs, pins, removal --------------------------------------------------------------

    def pin(self, name: str, version: str | None = None) -> str:
        """Pin ``name`` to a version (default: latest) in dload.lock; return the id."""
        vid = self.resolve(name, version) if version is not None else self._latest(name)
        self.manifest(name, vid)
        path = lock_path(create=True)
        assert path is not None
        with editing(path):
            pins = read_lock(path)
            pins[name] = vid
            write_lock(pins, path)
        return vid

    def unpin(self, name: str) -> bool:
        """Remove ``name`` from dload.lock; False when it was not pinned (a name the file
        holds is removed even when it is no valid dataset name: a typo's only way out)."""
        path = lock_path()
        if path is None or name not in read_lock(path):
            check_name(name)
            return False
        with editing(path):
            pins = read_lock(path)
            if pins.pop(name, None) is None:
                return False
            write_lock(pins, path)
        return True

    def _latest(self, name: str) -> str:
        ref = read_ref(self.storage, name, "latest")
        if ref is None:
            raise NotFoundError(self._missing(name))
        return ref.version

    def refs(self, name: str) -> dict[str, str]:
        """Ref and tag names of ``name`` -> version ids (NotFoundError for an unknown name)."""
        refs = {r: v.version for r, v in list_refs(self.storage, name).items()}
        if not refs and not self._version_ids(name):
            raise NotFoundError(self._missing(name))  # a typo is not "no refs"
        return refs

    def log(self, name: str) -> list[LogEntry]:
        """Every recorded ref move of ``name``, oldest first; a removed dataset's log stays
        readable, a name that never had one is a NotFoundError."""
        entries = list(read_log(self.storage, name))
        if not entries and not self._version_ids(name):
            raise NotFoundError(self._missing(name))
        return entries

    def _listed_shards(self, name: str) -> tuple[str | None, frozenset[str]]:
        """The latest version of ``name`` and the shards it lists (None and empty when there
        is none: a new dataset, whose name is checked, ``refuse_new_name``): a commit reusing
        one needs no touch to keep it from gc while that version's manifest stays stored
        (``store/publish.py``)."""
        try:
            ref = read_ref(self.storage, name, "latest")
            if ref is not None:
                return ref.version, frozenset(self.manifests.get(name, ref.version).digests())
        except StorageError:  # the storage failing (a stalled endpoint): not a fallback
            raise
        except DloadError as e:  # unreadable: every reused shard is touched, as before; a
            if isinstance(e, FolderCopyError):  # folder copied or renamed outside dload is
                raise  # refused (QA review65, 65c)
            return None, frozenset()
        self._new_name(name)
        return None, frozenset()

    def _new_name(self, name: str) -> None:
        """Refuse ``name`` for a new dataset (``refuse_new_name``); a dataset with a
        ``latest`` ref keeps any name it has."""
        refuse_new_name(self.storage, name, redact_url(self.storage.url))
