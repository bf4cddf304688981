"""Lineage of a version: where it came from, what was made from it, how its refs moved."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dload_arrow.errors import escaped
from dload_arrow.row_values import table_rows
from dload_arrow.sizes import format_bytes

if TYPE_CHECKING:
    from dload_arrow.catalog.catalog import Catalog

__all__ = ["SHOWN_SHARED", "Lineage", "lineage_of"]

# Rows of each section the text form shows: after n appends every version has n ancestors,
# n ref moves and shares shards with n others. The tables hold them all.
SHOWN_SHARED = 20
_MORE = "(all of them: --json, or repo.lineage(...).{})"


@dataclass(frozen=True)
class Lineage:
    """What the catalog knows about one version's history. ``print()`` it for a summary.

    Attributes:
        name: the dataset.
        version: the version id the lineage is about.
        ancestors: ``depth, relation, name, version, num_rows``; nearest first, recursive.
        descendants: same columns: appends and derived datasets made from this version.
        versions: every version of the dataset (``version, created, user, num_rows, ...``).
        moves: every ref move of the dataset (``time, ref, action, previous, version, ...``).
        shared: ``version, other_name, other_version, shared_shards, shared_bytes, shards``:
            the other versions, of any dataset of the root, listing some of this version's
            shards (stored once), most shared first.

    Built from the dataset's own versions, refs and log, the versions its lineage reaches
    and the versions sharing its shards, not from every manifest of the root: each version's
    parents and shard digests are summarized once per machine (see
    :mod:`~dload_arrow.catalog.lineage_scope`). The answer is that of the catalog's views.

    ``print()`` shows at most :data:`SHOWN_SHARED` rows of each section: the nearest
    ancestors and descendants, the latest ref moves, the most shared versions.
    """

    name: str
    version: str
    ancestors: pa.Table
    descendants: pa.Table
    versions: pa.Table
    moves: pa.Table
    shared: pa.Table

    @property
    def parents(self) -> list[dict[str, Any]]:
        """Direct inputs (depth 1) as dicts."""
        return [r for r in table_rows(self.ancestors) if r["depth"] == 1]

    @property
    def children(self) -> list[dict[str, Any]]:
        """Versions made directly from this one (depth 1) as dicts."""
        return [r for r in table_rows(self.descendants) if r["depth"] == 1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (times as ISO strings), for ``dload log --json``."""
        def rows(t: pa.Table) -> list[dict[str, Any]]:
            return [
                {k: _utc(v).isoformat() if isinstance(v, dt.datetime) else v
                 for k, v in r.items()}
                for r in table_rows(t)
            ]

        return {
            "name": self.name, "version": self.version,
            "ancestors": rows(self.ancestors), "descendants": rows(self.descendants),
            "versions": rows(self.versions), "moves": rows(self.moves),
            "shared": rows(self.shared),
        }

    def __repr__(self) -> str:
        return (f"Lineage({self.name!r} @ {self.version[:12]}: {self.ancestors.num_rows} "
                f"ancestors, {self.descendants.num_rows} descendants, {self.moves.num_rows} "
                f"ref moves, {self.shared.num_rows} versions sharing shards)")

    def __str__(self) -> str:
        out = [f"{self.name} @ {self.version[:12]}"]

        def chain(title: str, table: pa.Table, arrow: str) -> None:
            out.append(f"{title} (steps away, relation, version):")
            if not table.num_rows:
                out.append("  (none)")
            for r in table_rows(table.slice(0, SHOWN_SHARED)):
                rows = "removed" if r["num_rows"] is None else f"{r['num_rows']} rows"
                out.append(
                    f"  {arrow} {r['depth']} {escaped(r['relation']):<7} "
                    f"{escaped(r['name'])} @ {r['version'][:12]} ({rows})"
                )
            if table.num_rows > SHOWN_SHARED:
                out.append(f"  ... {table.num_rows - SHOWN_SHARED} more "
                           + _MORE.format(title))

        chain("ancestors", self.ancestors, "<-")
        chain("descendants", self.descendants, "->")
        out.append("ref moves:")
        skipped = max(0, self.moves.num_rows - SHOWN_SHARED)
        if skipped:
            out.append(f"  ... {skipped} earlier moves " + _MORE.format("moves"))
        for r in table_rows(self.moves.slice(skipped)):
            when = _utc(r["time"]).strftime("%Y-%m-%d %H:%M:%SZ") if r["time"] else "?"
            prev = (r["previous"] or "-")[:12]
            new = (r["version"] or "-")[:12]
            move = (f"{escaped(r['ref']):<10} {r['action']:<8} {prev} -> {new}" if r["ref"]
                    else f"{'-':<10} {r['action']:<8} {prev} removed")  # a version, not a ref
            who = escaped(f"{r['user'] or '?'}@{r['host'] or '?'}")
            out.append(f"  {when}  {move}  by {who}")
        if self.shared.num_rows:
            out.append("shards shared with other versions:")
            for r in table_rows(self.shared.slice(0, SHOWN_SHARED)):
                out.append(
                    f"  {r['version'][:12]} shares {r['shared_shards']}/{r['shards']} shards "
                    f"({format_bytes(r['shared_bytes'])}) with "
                    f"{escaped(r['other_name'])} @ {r['other_version'][:12]}"
                )
            if self.shared.num_rows > SHOWN_SHARED:
                out.append(f"  ... {self.shared.num_rows - SHOWN_SHARED} more versions "
                           + _MORE.format("shared"))
        return "\n".join(out)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython/Jupyter
        p.text(str(self))


def lineage_of(catalog: Catalog, name: str, version: str) -> Lineage:
    """Build the :class:`Lineage` of ``name`` at ``version`` (a resolved id).

    Reads only what the answer needs (:mod:`~dload_arrow.catalog.lineage_scope`), not every
    manifest of the root as ``catalog.refresh()`` does for SQL.
    """
    from dload_arrow.catalog.lineage_scope import lineage_tables, run_statements

    both = {"name": name, "version": version}
    with catalog._lock:  # the summaries and the log entries read are shared
        tables = lineage_tables(catalog, name, version)
    got = run_statements(tables, [
        ("ancestors", "ancestors", both), ("descendants", "descendants", both),
        ("versions", "dataset_versions", {"name": name}),
        ("moves", "ref_moves", {"name": name}), ("shared", "shared_shards", both),
    ])
    return Lineage(name=name, version=version, **got)


def _utc(t: dt.datetime) -> dt.datetime:
    """``t`` in UTC (a zoneless time is taken as UTC already)."""
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)
