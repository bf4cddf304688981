"""Two versions compared by their keys and shards: :meth:`Repository.diff` (``dload diff``).

A version is named as everywhere: ``NAME@VERSION`` (a tag, an id or an id prefix), a bare
version id (it names its dataset too), or a bare name (the version ``dload.lock`` pins, else
its latest). A bare second argument after ``NAME@V1`` is first tried as a version of NAME
(``diff("photos@v1", "v2")``). A :class:`Dataset` stands for its own name and version.
"""

from __future__ import annotations

import re
import string
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import ConfigError, DloadError, NotFoundError
from dload_arrow.repository.diff_rows import column_changes, row_hashes, shard_keys
from dload_arrow.repository.lock import pinned_version
from dload_arrow.store.names import KEY_COLUMN, parse_spec

if TYPE_CHECKING:
    from dload_arrow.repository.dataset import Dataset
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest import Manifest

__all__ = ["DiffMixin", "VersionDiff"]


@dataclass(frozen=True)
class VersionDiff:
    """What changed from one version to another (:meth:`Repository.diff`).

    ``old``/``new`` hold each side's ``name``, ``version``, ``rows``, ``shards`` and whether
    its version came from a ``dload.lock`` pin (``pinned``). ``added``/``removed`` list keys;
    ``in_both_unshared`` counts keys in both versions whose rows lie in shards that differ;
    ``changed`` lists those whose values differ (None unless ``values=True``); ``columns``
    lists columns ``added``, ``removed`` and ``changed`` (type). :meth:`to_dict` gives the
    form ``dload diff --json`` prints.
    """

    old: dict[str, Any]
    new: dict[str, Any]
    shards_shared: int
    shards_only_old: int
    shards_only_new: int
    added: list[str]
    removed: list[str]
    in_both_unshared: int
    changed: list[str] | None
    columns: dict[str, list[Any]]

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of every field (JSON-ready)."""
        return asdict(self)

    def __repr__(self) -> str:  # thousands of keys would flood a notebook
        cols = ", ".join(f"{k} {len(v)}" for k, v in self.columns.items() if v)
        changed = "" if self.changed is None else f", ~{len(self.changed)} changed"
        return (f"VersionDiff({self.old['name']}@{self.old['version'][:12]} -> "
                f"{self.new['name']}@{self.new['version'][:12]}: +{len(self.added)} keys, "
                f"-{len(self.removed)}{changed}, {self.in_both_unshared} in both in "
                f"differing shards; columns: {cols or 'same'})")


def _could_be_id(spec: str) -> bool:
    """Whether ``spec`` has the form of a version id or id prefix (4 to 64 hex digits)."""
    return 4 <= len(spec) <= 64 and all(c in string.hexdigits for c in spec)


class DiffMixin:
    """``diff``; mixed into :class:`~dload_arrow.repository.Repository`."""

    storage: Storage

    if TYPE_CHECKING:  # provided by Repository

        def manifest(self, name: str, version: str | None = None) -> Manifest: ...

        def datasets(self) -> list[str]: ...

        def resolve(self, name: str, version: str | None = None) -> str: ...

        def find_version(self, version: str) -> tuple[str, str]: ...

    def diff(self, old: str | Dataset, new: str | Dataset, *, values: bool = False
             ) -> VersionDiff:
        """Compare two versions: keys added and removed, shards shared, columns changed, and
        with ``values=True`` the keys whose values changed.

        Each side is ``"NAME@VERSION"``, a version id, a dataset name (its pinned or latest
        version) or a :class:`Dataset`. Only the key columns of shards the two versions do
        not share are read; ``values=True`` reads those shards whole (the columns both have)::

            d = repo.diff("photos@v1", "photos@latest", values=True)
            d.added, d.removed, d.changed, d.columns
        """
        sides = [self._diff_side(s) for s in (old, new)]  # None: a bare word
        named = [None if s is None else s[0] for s in sides]
        n1, v1 = sides[0] or self._resolve_side(str(old), named[1])
        n2, v2 = sides[1] or self._resolve_side(str(new), named[0])
        a, b = self.manifest(n1, v1), self.manifest(n2, v2)
        pins = [v is None and pinned_version(n) is not None for n, v in ((n1, v1), (n2, v2))]
        idx = {p["digest"] for m in (a, b) for p in m.key_index_parts}
        shared = (set(a.digests()) & set(b.digests())) - idx
        only_a = [s.digest for s in a.shards if s.digest not in shared]
        only_b = [s.digest for s in b.shards if s.digest not in shared]
        keys_a = set().union(*(shard_keys(self.storage, d) for d in only_a))
        keys_b = set().union(*(shard_keys(self.storage, d) for d in only_b))
        both = keys_a & keys_b  # rows of these may differ; a shared shard's rows cannot
        differ: list[str] | None = [] if values else None
        if values and both:
            common = [f.name for f in b.schema
                      if f.name in a.schema.names and f.name != KEY_COLUMN]
            ha, hb = (row_hashes(self.storage, only, both, common) for only in (only_a, only_b))
            differ = sorted(k for k in both if ha.get(k) != hb.get(k))
        side = [{"name": n, "version": m.version, "rows": m.num_rows, "shards": len(m.shards),
                 "pinned": p} for n, m, p in ((n1, a, pins[0]), (n2, b, pins[1]))]
        return VersionDiff(
            old=side[0], new=side[1], shards_shared=len(shared), shards_only_old=len(only_a),
            shards_only_new=len(only_b), added=sorted(keys_b - keys_a),
            removed=sorted(keys_a - keys_b), in_both_unshared=len(both), changed=differ,
            columns=column_changes(a.schema, b.schema))

    def _diff_side(self, spec: str | Dataset) -> tuple[str, str | None] | None:
        """``(name, version)`` of a Dataset or a ``NAME@VERSION``; None for a bare word
        (resolved by :meth:`_resolve_side`: a name, or a version id)."""
        from dload_arrow.repository.dataset import Dataset

        if isinstance(spec, str):
            return parse_spec(spec) if "@" in spec else None
        if not isinstance(spec, Dataset):
            raise ConfigError(f"diff compares versions: give 'NAME@VERSION', a version id, a "
                              f"dataset name or a Dataset, not {type(spec).__name__}")
        name, version = spec.name, spec.version
        if spec.units is not None or spec.predicate is not None:
            raise ConfigError(f"diff compares whole versions, and {spec!r} is a filtered view:"
                              f" give repo.dataset({name!r}, {version[:12]!r})")
        if spec.repo.storage.url != self.storage.url:
            from dload_arrow.storage import redact_url

            raise ConfigError(f"diff compares versions of one root, and this Dataset is of "
                              f"{redact_url(spec.repo.storage.url)}: call diff on that root's "
                              "Repository, or compare its rows with to_arrow()")
        return name, version

    def _resolve_side(self, spec: str, other: str | None) -> tuple[str, str | None]:
        """``(name, version)`` of a bare argument: a dataset's name, else (``other``: the other
        argument's name, if it gave one, ``NAME@...``) one of its versions or tags, else a
        version id of the root."""
        first = None  # why it is no version of the other argument's dataset
        names = self.datasets()
        if spec in names:  # a dataset's own name wins: `diff b@OLD b` took a dataset named
            return spec, None  # `b` as a version prefix of b (QA lineage64)
        if other is not None:
            try:
                self.resolve(other, spec)
                return other, spec
            except DloadError as e:
                first = e
        if not _could_be_id(spec):  # only a dataset name: say so, with the closest names
            from dload_arrow.repository.missing import unknown_dataset
            from dload_arrow.storage import redact_url

            short = (f" A bare version id needs 4 hex digits or more ({spec!r} is too short: "
                     f"NAME@{spec} takes it)." if re.fullmatch(r"[0-9a-f]{1,3}", spec) else "")
            raise NotFoundError(unknown_dataset(spec, names, redact_url(self.storage.url))
                                + " A tag needs its dataset: NAME@TAG." + short)
        try:
            return self.find_version(spec)
        except DloadError as e:
            if first is not None and " was removed " in str(first):  # a removed version of it
                raise first from None
            raise NotFoundError(
                f"{spec!r} is neither a dataset nor a version id of this root ({e}); give "
                "NAME@VERSION, a version id, or a dataset name (its pinned or latest "
                "version)") from e
