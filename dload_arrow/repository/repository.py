"""``Repository``: the facade over one storage root."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dload_arrow.args import check_bool, check_path, name_as
from dload_arrow.config import Settings, resolve_settings, said
from dload_arrow.errors import InvalidNameError, NotFoundError, StorageError
from dload_arrow.read.context import ReadContext
from dload_arrow.repository.dataset import Dataset
from dload_arrow.repository.gc import GcReport, collect_garbage
from dload_arrow.repository.lock import is_pinned, stale_pin
from dload_arrow.repository.missing import published_names
from dload_arrow.repository.versions import VersionInfo, VersionsMixin
from dload_arrow.repository.writes import WritesMixin
from dload_arrow.sizes import parse_duration
from dload_arrow.storage import Storage, open_storage, redact_url, warn_unused_endpoint
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.manifest_cache import ManifestCache
from dload_arrow.store.refs import read_ref
from dload_arrow.store.removals import removal_path

if TYPE_CHECKING:
    from dload_arrow.catalog import Catalog, Lineage
    from dload_arrow.read.pull import CacheStatus, PullReport

__all__ = ["Repository", "VersionInfo"]


class Repository(WritesMixin, VersionsMixin):
    """All datasets under one root (a local directory by default, or an S3 bucket)."""

    def __init__(self, storage: Storage, settings: Settings) -> None:
        self.storage = storage
        self.settings = settings
        self.manifests = ManifestCache(storage, settings.cache_dir)  # fetched once per machine

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str] | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_budget: str | int | None = None,
        endpoint_url: str | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> Repository:
        """Open the storage root that holds every dataset (created on the first commit).

        Each argument left unset comes from the environment (``DLOAD_ROOT``,
        ``DLOAD_CACHE_DIR``, ``DLOAD_CACHE_BUDGET``, ``DLOAD_ENDPOINT_URL``), then the nearest
        ``dload.toml``, then ``~/.config/dload/config.toml``, then the defaults (docs/CLI.md).

        Args:
            root: a local directory (str or pathlib.Path; default
                ``~/.local/share/dload/root``) or ``s3://bucket/prefix``.
            cache_dir: this machine's shard cache (default ``~/.cache/dload``).
            cache_budget: the most bytes the cache may hold: an int or a size (``"20GB"``);
                default ``"auto"``, half the free disk.
            endpoint_url: the S3 endpoint of an ``s3://`` root (a local server, another
                cloud); unused for a local root (warned).
            storage_options: passed to fsspec's filesystem of a remote root (credentials).

        Raises:
            TypeError: a root or cache dir that is not a str or path.
            ConfigError: a bad setting, naming where it came from.
            StorageError: a local root that is a file or a dangling link.
        """
        settings = resolve_settings(
            root=None if root is None else check_path("Repository.open", "root", root),
            cache_dir=None if cache_dir is None else check_path("Repository.open", "cache_dir",
                                                                cache_dir),
            cache_budget=cache_budget,  # a number as it is: config.budget_text reads it
            endpoint_url=endpoint_url,
        )
        try:
            storage = open_storage(settings.root, endpoint_url=settings.endpoint_url,
                                   storage_options=storage_options)
        except StorageError as e:  # a local root that is a file, or a dangling link
            raise StorageError(f"{e} (the root from {said('root', settings.sources['root'])})"
                               ) from None
        warn_unused_endpoint(storage, endpoint_url)  # the argument only: env may set it for all
        repo = cls(storage, settings)
        repo.read_context._check_not_in_root(layout_only=True)  # before a manifest is cached
        return repo

    def __repr__(self) -> str:
        return f"Repository({redact_url(self.storage.url)!r})"

    @cached_property
    def read_context(self) -> ReadContext:
        """Root plus cache settings, handed to readers and workers."""
        return ReadContext(self.storage, self.settings.cache_dir, self.settings.cache_budget,
                           cache_dir_source=self.settings.sources.get("cache_dir"))

    # --- listing and resolving ---------------------------------------------------------------

    def datasets(self) -> list[str]:
        """Names of every dataset under the root with a published version (its ``latest``
        ref exists), sorted: the manifests of a commit that stopped before publishing do not
        make one (``rm(name)`` removes them); a ``latest`` ref lost since is warned about."""
        return published_names(self.storage, redact_url(self.storage.url))

    def manifest(self, name: str, version: str | None = None) -> Manifest:
        """The validated manifest of a version (resolved like :meth:`dataset`)."""
        vid = self.resolve(name, version)
        try:  # a full id or a pin, taken as given: the root must still store it
            if version == vid or (version is None and is_pinned(name, vid)):
                self.manifests.check_stored(name, vid)
            return self.manifests.get(name, vid)
        except (NotFoundError, InvalidNameError) as e:  # the latter: cached under another name
            if version in (None, "latest") and isinstance(e, NotFoundError):
                self._check_latest(name, vid, e)
            if version is not None and not self._version_ids(name):  # a mistyped name with an id
                raise NotFoundError(self._missing(name)) from e
            if version is not None or not isinstance(e, NotFoundError):
                raise
            better = stale_pin(name, vid, e,  # a pin to a version this root lacks, if pinned
                               removed=self.storage.exists(removal_path(name, vid)))
            if better is e:
                raise
            raise better from e

    def _check_latest(self, name: str, vid: str, error: NotFoundError) -> None:
        """Say so when ``latest`` points at ``vid``, whose manifest is gone."""
        ref = read_ref(self.storage, name, "latest")
        if ref is not None and ref.version == vid:
            raise NotFoundError(
                f"latest of {name!r} points at removed version {vid[:12]} (an interrupted "
                f"rm?): run `dload rm {name} --version {vid} --yes` to finish it") from error

    def dataset(self, name: str, version: str | None = None) -> Dataset:
        """A version of ``name``: explicit id or prefix or tag, else dload.lock, else latest."""
        return Dataset(self, self.manifest(name, version))

    # --- gc (commit, append, derive: writes.py; versions, refs, pins: versions.py) --------

    def gc(self, grace: str | float | timedelta = "1h", dry_run: bool = False) -> GcReport:
        """Delete shards no manifest references that are older than ``grace`` (default 1h)."""
        check_bool("gc", "dry_run", dry_run)  # "no" is truthy, None falsy: both refused
        return collect_garbage(self.storage, parse_duration(grace, "grace"), dry_run=dry_run)

    # --- cache (issue: streaming) -------------------------------------------------------------

    def pull(self, name: str, version: str | None = None, progress: bool | None = None
             ) -> PullReport:
        """Download every shard of a version into this machine's cache (concurrent, resumable).

        Returns a :class:`~dload_arrow.read.pull.PullReport`. Raises InfeasiblePlanError before
        any download when the version cannot fit the cache budget or the free disk.
        """
        from dload_arrow.read.pull import pull

        return pull(self.read_context, self.manifest(name, version), progress=progress)

    def cache_status(self) -> CacheStatus:
        """Budget, bytes used and residency of every dataset version in this machine's cache."""
        from dload_arrow.read.pull import cache_status

        listed = [(n, v) for n in self.datasets() for v in self._version_ids(n)]
        return cache_status(self.read_context, [self.manifests.get(n, v) for n, v in listed])

    def cache_clear(self) -> int:
        """Remove every cached shard no live reader holds; return the bytes freed."""
        return self.read_context.cache().clear()

    # --- catalog (issue: catalog) -------------------------------------------------------------

    @cached_property
    def catalog(self) -> Catalog:
        """The :class:`~dload_arrow.catalog.Catalog`: DuckDB views over this root's manifests."""
        from dload_arrow.catalog import Catalog

        return Catalog(self.storage, self.settings.cache_dir,
                       resolve=self.manifest, shard_files=self._catalog_files,
                       manifests=self.manifests)

    def _catalog_files(self, manifests: Sequence[Manifest]) -> Any:
        from dload_arrow.catalog.files import query_files

        return query_files(self.read_context, manifests)

    def sql(self, query: str, /, **params: Any) -> pa.Table:
        """Run SQL over the catalog and samples; ``$name`` parameters are bound from ``params``.

        Views: ``datasets``, ``versions``, ``shards``, ``refs``, ``log``, ``parents``,
        ``lineage``; ``samples('<name>' [, '<version>'])`` reads a dataset's rows.
        """
        return self.catalog.sql(query, params)

    def lineage(self, name: str, version: str | None = None) -> Lineage:
        """Ancestors, descendants, ref moves and shared shards of a version (default latest;
        a removed one too: the log knows it). NotFoundError for a version it never had."""
        from dload_arrow.catalog import lineage_of
        from dload_arrow.store.removals import known_version

        vid = known_version(self.storage, name, version, self.resolve, self._version_ids)
        return lineage_of(self.catalog, name, vid)



name_as(Repository, *(c for c in Repository.__mro__[1:]  # (errors say Repository.tag())
                      if c.__module__.startswith("dload_arrow.repository.")))
