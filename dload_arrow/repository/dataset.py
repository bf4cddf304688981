"""``Dataset``: one immutable version of a named dataset, and the entry to reading it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.read.context import ReadContext
from dload_arrow.store.manifest import Manifest

if TYPE_CHECKING:
    from dload_arrow.repository.repository import Repository

__all__ = ["Dataset"]


class Dataset:
    """A dataset version: metadata from its manifest, and the read methods.

    Obtain one from :meth:`Repository.dataset`. Everything here is immutable: the version id
    names exactly these bytes on every machine.
    """

    def __init__(
        self,
        repo: Repository,
        manifest: Manifest,
        *,
        predicate: pc.Expression | None = None,
        units: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        self.repo = repo
        self.manifest = manifest
        # A filtered view (``where``): only these (shard, row group) units are read, and rows
        # are filtered by ``predicate`` after decoding. None means all units / all rows.
        self.predicate = predicate
        self.units = None if units is None else list(units)

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, version={self.version[:12]!r}, rows={self.num_rows}, "
            f"shards={len(self.manifest.shards)})"
        )

    @property
    def context(self) -> ReadContext:
        """The root and cache this dataset reads through."""
        return self.repo.read_context

    @property
    def name(self) -> str:
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
        return self.manifest.meta

    @property
    def recipe(self) -> str | None:
        """The script that produced the data, verbatim (never executed)."""
        return self.manifest.recipe

    @property
    def parents(self) -> list[dict[str, Any]]:
        return self.manifest.parents

    @property
    def num_rows(self) -> int:
        return self.manifest.num_rows

    @property
    def num_bytes(self) -> int:
        """Bytes of all shards in the root."""
        return self.manifest.num_bytes

    def __len__(self) -> int:
        return self.num_rows

    # --- read path (issue: streaming) -------------------------------------------------------

    # --- exploration (issue: catalog) -------------------------------------------------------

    # --- pipelines (issue: pipelines) -------------------------------------------------------
