"""Writing versions: ``commit``, ``append`` and ``derive``, mixed into
:class:`~dload_arrow.repository.Repository`."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import pyarrow as pa

from dload_arrow.errors import DloadError, user_stacklevel
from dload_arrow.read.random_access import stored_keys
from dload_arrow.store.commit import Version, commit_samples
from dload_arrow.store.names import check_name
from dload_arrow.store.shard import DEFAULT_ROW_GROUP_SIZE, DEFAULT_SHARD_SIZE

if TYPE_CHECKING:
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest import Manifest

__all__ = ["WritesMixin"]

P = ParamSpec("P")
R = TypeVar("R")


def _options_named(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` refusing an unknown keyword argument with the options it takes (Python's own
    TypeError names one only; args.name_as names both this wrapper and ``fn`` Repository's)."""
    params = inspect.signature(fn).parameters
    takes = ", ".join(n for n, p in params.items() if p.kind is p.KEYWORD_ONLY)

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            name = args[1] if len(args) > 1 else kwargs.get("name", "")
            raise TypeError(f"{fn.__name__}({name!r}) got unexpected keyword argument(s) "
                            f"{', '.join(unknown)}; it takes {takes}")
        out = fn(*args, **kwargs)
        _pinned_elsewhere(str(args[1] if len(args) > 1 else kwargs.get("name", "")), out)
        return out

    return call


def _pinned_elsewhere(name: str, out: object) -> None:
    """Warn when dload.lock pins ``name`` to another version than the one just published:
    ``repo.dataset(name)`` goes on reading the pinned one (QA lineage64: a derive into a
    pinned dataset said nothing)."""
    from dload_arrow.repository.lock import lock_path, pinned_version

    vid = getattr(out, "version", None)
    try:
        pin = pinned_version(name) if isinstance(vid, str) else None
    except DloadError:
        return  # (a malformed pin: every read of it says so)
    if pin is not None and pin != vid:
        warnings.warn(f"{name!r} is pinned in {lock_path()} to {pin[:12]}: reading {name!r} "
                      f"(repo.dataset, `dload head`) goes on giving that version, not "
                      f"{str(vid)[:12]} just published; "
                      f"`dload pin {name}` pins latest, `dload unpin {name}` drops the pin",
                      stacklevel=user_stacklevel())


class WritesMixin:
    """``commit``, ``append``, ``derive``; mixed into :class:`Repository`."""

    storage: Storage

    if TYPE_CHECKING:  # provided by Repository

        def manifest(self, name: str, version: str | None = None) -> Manifest: ...

        def _listed_shards(self, name: str) -> tuple[str | None, frozenset[str]]: ...

        def _guard_commit(self, name: str, if_latest: str | None, latest: str | None,
                          parents: list[dict[str, Any]] | None) -> str | None: ...

    @_options_named
    def commit(
        self,
        name: str,
        samples: Any,
        *,
        key: str | None = None,
        meta: dict[str, Any] | None = None,
        recipe: str | None = None,
        shard_size: int | str = DEFAULT_SHARD_SIZE,
        row_group_size: int | str = DEFAULT_ROW_GROUP_SIZE,
        schema: pa.Schema | None = None,
        progress: bool | None = None,
        parents: list[dict[str, Any]] | None = None,
        if_latest: str | None = None,
    ) -> Version:
        """Commit ``samples`` as the new ``latest`` version of ``name`` (its rows only: an
        append published meanwhile is left out of ``latest``, warned; ``if_latest`` guards).

        Args:
            name: dataset name (letters, digits, ``._-``).
            samples: sample dicts (as ``ds.samples()`` yields them), ``(key, {column:
                value})`` pairs or a ``{key: {column: value}}`` dict, a pyarrow Table or
                RecordBatchReader, or a polars/pandas DataFrame.
            key: the key column of a table or of sample dicts (default ``__key__``; where
                there is none, keys are generated row numbers).
            meta: JSON-serialisable user metadata stored in the manifest.
            recipe: the script that produced the data, stored verbatim, never executed.
            shard_size: target shard size, bytes or text such as "64MiB" (default 128 MiB).
            row_group_size: target row-group size, likewise (default 2 MiB).
            schema: the sample schema; inferred from the first batch when omitted.
            progress: show a progress bar (default: on a terminal or in a notebook only).
            parents: lineage records (``{"name", "version", ...}``) of the inputs.
            if_latest: publish only while ``latest`` is this version (id, prefix or tag),
                else ConflictError, nothing published: for samples read from it (compaction).

        Returns:
            The :class:`Version` with its id and upload counts.
        """
        check_name(name)
        latest, listed = self._listed_shards(name)
        return commit_samples(
            self.storage, name, samples, key=key, meta=meta, recipe=recipe, schema=schema,
            shard_size=shard_size, row_group_size=row_group_size, progress=progress,
            parents=parents, protected=listed, protected_by=latest,
            if_latest=self._guard_commit(name, if_latest, latest, parents))

    @_options_named
    def append(
        self,
        name: str,
        samples: Any,
        *,
        key: str | None = None,
        meta: dict[str, Any] | None = None,
        recipe: str | None = None,
        shard_size: int | str | None = None,
        row_group_size: int | str | None = None,
        progress: bool | None = None,
    ) -> Version:
        """A new version of ``name``: the latest version's shards plus ``samples``.

        Appends may run at once from several processes: each is published on top of whatever
        ``latest`` is when it finishes (its shards uploaded once), none is lost.

        Args:
            name: an existing dataset (an append extends ``latest``, never a pin).
            samples: as :meth:`commit` takes them; their columns must be the dataset's
                (a column it lacks is a SchemaError; one left out is stored as nulls, warned).
            key: the key column of a table or of sample dicts, as in :meth:`commit`.
            meta: the new version's metadata; None (the default) keeps the latest version's,
                unlike :meth:`commit`, whose None stores none; ``meta={}`` clears it.
            recipe: likewise: None keeps the latest version's recipe, ``""`` clears it.
            shard_size, row_group_size: None keeps the sizes the dataset was written with.
            progress: show a progress bar (default: on a terminal or in a notebook only).

        Returns:
            The :class:`Version` with its id and upload counts.

        Raises:
            NotFoundError: no dataset ``name`` (commit it first).
            SchemaError: a column the dataset lacks, a value its column's type cannot hold,
                or a key the dataset already holds (an append adds, never replaces).
        """
        parent = self.manifest(name, "latest")  # not a pin: an append extends latest
        settings = parent.info.get("settings", {})

        def rebase() -> Manifest:
            return self.manifest(name, "latest")

        def read_keys(m: Manifest, shards: Sequence[int]) -> pa.Array:
            return stored_keys(self.storage, m, shards)

        return commit_samples(
            self.storage, name, samples, key=key,
            meta=meta, recipe=recipe,  # None: the meta / recipe of the version built on
            # None (not 0 or ""): the parent's sizes; any given value is checked like commit's
            shard_size=settings.get("shard_size", DEFAULT_SHARD_SIZE) if shard_size is None
            else shard_size,
            row_group_size=settings.get("row_group_size", DEFAULT_ROW_GROUP_SIZE)
            if row_group_size is None else row_group_size,
            parent=parent, read_keys=read_keys, progress=progress, rebase=rebase,
            protected=frozenset(parent.digests()), protected_by=parent.version,
        )

    @_options_named
    def derive(
        self,
        name: str,
        pipe: Any,
        *,
        meta: dict[str, Any] | None = None,
        recipe: str | None = None,
        progress: bool = False,
        force: bool = False,
        shard_size: int | str | None = None,
        row_group_size: int | str | None = None,
        schema: pa.Schema | None = None,
    ) -> Version:
        """Run a finite deterministic pipeline once and commit it as ``name``, memoized by the
        pipeline's fingerprint under ``derived/`` (its sources' versions, operators,
        parameters and code: :mod:`dload_arrow.repository.derive`).

        Args:
            name: the dataset to create (a new version of it); ``latest`` points at the result.
            pipe: a finite, deterministic pipeline of row dicts (not batches), or a Dataset or
                ``where()`` view (its rows as they are).
            meta, recipe: stored like :meth:`commit`'s; changing them makes a new version over
                the same shards without computing (omitted: a memo keeps its own).
            progress: show a progress bar while committing.
            force: run and commit even if memoized (something the fingerprint cannot see
                changed: a file the code reads, an object's attributes).
            shard_size, row_group_size, schema: as :meth:`commit` (None: its defaults).

        Returns:
            The version; ``shards_uploaded == 0`` and ``seconds == 0`` when it was memoized.

        Raises:
            ConfigError: the pipeline may never end.
            SchemaError: an item is not a dict, or is a batch.
        """
        from dload_arrow.repository.derive import derive

        given = {"shard_size": shard_size, "row_group_size": row_group_size, "schema": schema}
        return derive(self, name, pipe, meta=meta, recipe=recipe,  # type: ignore[arg-type]
                      progress=progress, force=force,
                      **{k: v for k, v in given.items() if v is not None})  # (the memo's key)
