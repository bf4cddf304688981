"""``VersionFields``: what a :class:`~dload_arrow.repository.dataset.Dataset` tells of its
version without reading a shard: name, id, schema, meta, recipe, lineage, its read context."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dload_arrow.read.context import ReadContext
from dload_arrow.store.manifest import Manifest

if TYPE_CHECKING:
    from dload_arrow.repository.repository import Repository

__all__ = ["VersionFields"]


class VersionFields:
    """The manifest's fields as properties (the dataset's ``repo`` and ``manifest``)."""

    repo: Repository
    manifest: Manifest

    @property
    def context(self) -> ReadContext:
        """The root and cache this dataset reads through."""
        return self.repo.read_context

    @property
    def name(self) -> str:
        """The dataset's name in its root."""
        return self.manifest.name

    @property
    def version(self) -> str:
        """The version id (sha256 of the manifest)."""
        return self.manifest.version

    @property
    def schema(self) -> pa.Schema:
        """The sample schema, ``__key__`` first."""
        return self.manifest.schema

    @property
    def meta(self) -> dict[str, Any]:
        """The version's ``meta=`` (as committed: a JSON object, empty when none)."""
        return self.manifest.meta

    @property
    def recipe(self) -> str | None:
        """The script that produced the data, verbatim (never executed)."""
        return self.manifest.recipe

    @property
    def parents(self) -> list[dict[str, Any]]:
        """The versions this one was made from (append, derive): name, version, relation."""
        return self.manifest.parents

    def __dload_fingerprint__(self) -> dict[str, Any]:
        """What a pipeline's fingerprint hashes of this dataset when a function reads it (a
        ``map`` looking labels up in another dataset): its version and, for a view, its
        filters and row groups, so a derive over a new version of it runs again (QA active65:
        a corrected label came back old from the memo)."""
        filters = [f.text for f in getattr(self, "_filters", ())]
        units = getattr(self, "units", None)
        return {"name": self.name, "version": self.version, "where": filters,
                "units": None if units is None else [list(u) for u in units]}
