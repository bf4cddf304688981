"""The checks a commit makes before it reads its samples: its ``if_latest`` still ``latest``
(``store/replaced.py``), and its ``parents=`` versions this root has or had."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dload_arrow.errors import ConfigError, ConflictError, NotFoundError
from dload_arrow.store.manifest_meta import check_parents
from dload_arrow.store.names import manifest_path
from dload_arrow.store.removals import known_version
from dload_arrow.store.replaced import moved_error

if TYPE_CHECKING:
    from dload_arrow.storage import Storage

__all__ = ["CommitGuardMixin"]


class CommitGuardMixin:
    """``_guard_commit``; mixed into :class:`~dload_arrow.repository.Repository`."""

    storage: Storage

    if TYPE_CHECKING:  # provided by Repository

        def resolve(self, name: str, version: str | None = None) -> str: ...

        def _version_ids(self, name: str) -> list[str]: ...

    def _guard_commit(self, name: str, if_latest: str | None, latest: str | None,
                      parents: list[dict[str, Any]] | None) -> str | None:
        """The full id of a commit's ``if_latest``; ConflictError at once when ``latest`` is
        another version (nothing uploaded yet). Each of its ``parents`` must be a version
        this root has or had (QA infer60: a mistyped id showed in lineage as "removed")."""
        check_parents(parents)
        for p in parents or ():
            try:
                known_version(self.storage, p["name"], p["version"], self.resolve,
                              self._version_ids)
            except NotFoundError as e:
                raise NotFoundError(
                    f"parents= entry {p['name']}@{p['version'][:12]}: {e} (a parent is a "
                    "version of this root: repo.dataset(name).version gives it; record other "
                    "provenance in meta=)") from None
        if if_latest is None:
            return None
        if not isinstance(if_latest, str) or not if_latest.strip():
            raise ConfigError(f"if_latest (--if-latest) {if_latest!r} names no version (an "
                              f"unset variable?): give the version the samples were read from "
                              f"(repo.dataset({name!r}, 'latest').version; `dload info "
                              f"{name}@latest`), or leave it out for no check")
        if latest is None:
            raise ConflictError(f"commit to {name!r} with if_latest (--if-latest) "
                                f"{if_latest[:12]}: {name!r} has no version (new, or removed): "
                                "leave if_latest out to create it")
        want = self.resolve(name, if_latest)
        if want != latest and not self.storage.exists(manifest_path(name, want)):
            raise NotFoundError(f"if_latest (--if-latest) {if_latest[:12]} is no stored "
                                f"version of {name!r} (`dload versions {name}` lists them)")
        if want != latest and not _published_from(self.storage, name, want, latest):
            raise moved_error(name, want, latest, stored=False)
        return want  # (the publish refuses other samples, and takes its own result as done)


def _published_from(storage: Storage, name: str, want: str, latest: str) -> bool:
    """Whether ``latest`` was published by a commit over ``want`` (the last move of the ref):
    a retry of a guarded commit that published may be that commit's rerun, whose identical
    samples find their version there (a no-op) where other samples are refused at publish
    (QA etl63: every rerun of a job step that had published was refused)."""
    from dload_arrow.store.ref_log import read_log

    moves = [e for e in read_log(storage, name) if e.ref == "latest"]
    last = max(moves, key=lambda e: e.seq, default=None)
    return last is not None and (last.previous, last.version, last.action) == (
        want, latest, "commit")
