"""The raw tables one lineage reads, and its queries run over them alone.

:meth:`Catalog.refresh` builds every table of every manifest for SQL over the whole root;
a lineage needs far less. One listing of the root names every version; their
:class:`~dload_arrow.catalog.summaries.Summary` objects (parents, shard digests, kept on disk
by version id) say which versions the lineage reaches. The tables then hold:

* ``dload_raw_versions`` and ``dload_raw_parents``: the dataset's own versions, the versions
  its lineage reaches (ancestors, across datasets) and those reaching it (descendants); the
  parents of a removed version come from its removal record (``store/removals.py``), so the
  walk goes on through it;
* ``dload_raw_shards``: the shards (digest and bytes) of every version of the root that lists
  a shard of this version: ``shared`` is root-wide, as in the full catalog;
* ``dload_raw_refs`` and ``dload_raw_log``: the dataset's own refs, log entries and removals.

The named statements of ``sql/`` run over them unchanged, on a connection of their own (the
catalog's keeps the whole root's tables), so the answer is the one the full catalog gives.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dload_arrow.arrays import int64_array, string_array
from dload_arrow.catalog.statements import VIEW_ORDER, statement
from dload_arrow.catalog.tables import RAW_SCHEMAS, list_root, raw_table

if TYPE_CHECKING:
    from dload_arrow.catalog.catalog import Catalog
    from dload_arrow.catalog.summaries import Summary

__all__ = ["lineage_tables", "run_statements"]

Node = tuple[str, str]  # (dataset, version id)


def lineage_tables(catalog: Catalog, name: str, version: str) -> dict[str, pa.Table]:
    """The raw tables the lineage of ``name`` at ``version`` reads (see the module doc)."""
    found = list_root(catalog.storage)
    summaries = catalog.summaries.of(found["manifests"])
    up: dict[Node, list[Node]] = defaultdict(list)
    down: dict[Node, list[Node]] = defaultdict(list)
    snap = catalog.snapshotter
    removed = snap.removed(found, summaries)  # the edges of removed versions
    edges = {node: s.parents for node, s in summaries.items()} | removed
    for node, rows in edges.items():
        for p in rows:
            up[node].append((p["parent_name"], p["parent_version"]))
            down[(p["parent_name"], p["parent_version"])].append(node)
    me = (name, version)
    scope = sorted(_reached(me, up) | _reached(me, down)
                   | {node for node in summaries if node[0] == name})
    inside = [summaries[node] for node in scope if node in summaries]
    return {
        "dload_raw_versions": raw_table([s.row for s in inside], "dload_raw_versions"),
        "dload_raw_parents": raw_table([p for node in scope for p in edges.get(node, ())],
                                       "dload_raw_parents"),
        "dload_raw_shards": _sharing(summaries, summaries.get(me)),
        "dload_raw_refs": snap.refs([r for r in found["refs"] if r[0] == name]),
        "dload_raw_log": snap.log([e for e in found["log"] if e[0] == name],
                                  [r for r in found["removed"] + found["removed_again"]
                                   if r[0] == name]),
    }


def _reached(start: Node, edges: dict[Node, list[Node]]) -> set[Node]:
    """``start`` and every node reachable from it along ``edges``."""
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _sharing(summaries: dict[Node, Summary], mine: Summary | None) -> pa.Table:
    """``dload_raw_shards`` rows (name, version, digest, bytes) of every version's shards
    that ``mine`` lists too; the other columns are null (the lineage reads none of them)."""
    digests = list(dict.fromkeys(mine.digests)) if mine is not None else []
    index = {d: i for i, d in enumerate(digests)}
    owners: list[Node] = []
    owner_at: list[int] = []
    digest_at: list[int] = []
    sizes: list[int] = []
    for node, s in summaries.items():
        hits = [(index[d], b) for d, b in zip(s.digests, s.sizes, strict=True) if d in index]
        if hits:
            owner_at.extend([len(owners)] * len(hits))
            owners.append(node)
            digest_at.extend(i for i, _ in hits)
            sizes.extend(b for _, b in hits)
    schema = RAW_SCHEMAS["dload_raw_shards"]
    n = len(owner_at)
    at = int64_array(owner_at)
    columns = {  # taken from small arrays: no Python string per row
        "name": string_array([o[0] for o in owners]).take(at),
        "version": string_array([o[1] for o in owners]).take(at),
        "digest": string_array(digests).take(int64_array(digest_at)),
        "bytes": int64_array(sizes),
    }
    return pa.Table.from_arrays(
        [columns.get(f.name, pa.nulls(n, f.type)) for f in schema], schema=schema)


def run_statements(tables: dict[str, pa.Table],
                   queries: list[tuple[str, str, dict[str, Any]]]) -> dict[str, pa.Table]:
    """Run ``(key, statement name, params)`` over ``tables`` on a connection of their own,
    with the views the statements read (a DuckDB connection costs ~0.1 s; each view more)."""
    from dload_arrow.catalog.catalog import _duckdb, _empty, _register

    texts = [statement(st).text for _, st, _ in queries]
    read = list(texts)
    views: list[str] = []
    for view in reversed(VIEW_ORDER):  # later views read earlier ones
        if any(re.search(rf"\b{view}\b", t) for t in read):
            views.insert(0, view)
            read.append(statement(view).text)
    con = _duckdb().connect(":memory:", config={"threads": 1})  # small tables
    con.execute("SET TimeZone = 'UTC'")  # times in UTC whatever TZ says, as Catalog's
    try:
        for name, schema in RAW_SCHEMAS.items():
            _register(con, name, tables.get(name, _empty(schema)))
        for view in views:
            con.execute(statement(view).text)
        return {key: con.sql(text, params=params).to_arrow_table()
                for (key, _, params), text in zip(queries, texts, strict=True)}
    finally:
        con.close()
