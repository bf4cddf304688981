"""QA pass 8 on the catalog: lineage over histories with many paths, chained where() reprs."""

from __future__ import annotations

from collections import deque

import pyarrow as pa
import pytest

from dload_arrow import Repository


def _nearest(parents: dict[str, list[str]], start: str) -> dict[str, int]:
    """Breadth-first depths of every ancestor of ``start``."""
    depth: dict[str, int] = {}
    todo = deque([(p, 1) for p in parents.get(start, [])])
    while todo:
        v, d = todo.popleft()
        if v not in depth:
            depth[v] = d
            todo.extend((p, d + 1) for p in parents.get(v, []))
    return depth


@pytest.mark.timeout(300)
def test_lineage_of_a_pseudo_labelling_history_is_exact_and_does_not_walk_every_path(
        repo: Repository) -> None:
    # labels_k+1 from labels_k and preds_k, preds_k from labels_k: 2**24 paths from the last
    # labels version to the first (one row per path ran out of memory), 49 versions
    def one(key: str) -> pa.Table:
        return pa.table({"__key__": [key], "x": [0]})

    lab = repo.commit("labels", one("l0"), progress=False).version
    parents: dict[str, list[str]] = {}
    for k in range(24):
        pred = repo.commit("preds", one(f"p{k}"), progress=False, parents=[
            {"name": "labels", "version": lab, "relation": "derive"}]).version
        new = repo.commit("labels", one(f"l{k + 1}"), progress=False, parents=[
            {"name": "labels", "version": lab, "relation": "derive"},
            {"name": "preds", "version": pred, "relation": "derive"}]).version
        parents[pred], parents[new] = [lab], [lab, pred]
        lab = new
    want = _nearest(parents, lab)
    got = repo.lineage("labels").ancestors
    assert dict(zip(got.column("version").to_pylist(), got.column("depth").to_pylist(),
                    strict=True)) == want
    rows = repo.sql("select version, related_version, depth from lineage "
                    "where direction = 'ancestor'").to_pylist()
    assert len(rows) == sum(len(_nearest(parents, v)) for v in parents)
    assert {r["related_version"]: r["depth"] for r in rows if r["version"] == lab} == want
    assert max(want.values()) == 24


def test_a_chained_where_shows_each_filter_in_brackets(repo: Repository) -> None:
    repo.commit("w", [(f"k{i:04d}", {"grp": i % 10, "label": i % 7}) for i in range(700)],
                progress=False)
    view = repo.dataset("w").where("grp = 4 or grp = 5").where("label = 3")
    shown = repr(view).split("where=")[1].split(", rows=")[0].strip("'")
    assert shown == "(grp = 4 or grp = 5) AND (label = 3)"
    assert len(repo.dataset("w").where(shown)) == len(view) == 20
    assert "where='label = 3'" in repr(repo.dataset("w").where("label = 3"))


def test_queries_over_unchanged_manifests_reuse_their_tables(repo: Repository) -> None:
    repo.commit("a", [("k", {"x": 1})], progress=False)
    first = repo.catalog.refresh().tables["dload_raw_shards"]
    assert repo.catalog.refresh().tables["dload_raw_shards"] is first  # nothing new: reused
    repo.tag("a", repo.dataset("a").version, "v1")  # a ref moves: refs and log read again
    snap = repo.catalog.refresh()
    assert snap.tables["dload_raw_shards"] is first
    assert ("a", "v1") in {(r["name"], r["ref"]) for r in snap.tables["dload_raw_refs"].to_pylist()}
    v = repo.append("a", [("k2", {"x": 2})], progress=False)  # a new manifest: rebuilt
    assert repo.catalog.refresh().tables["dload_raw_shards"] is not first
    got = repo.sql("select version from versions where name = 'a'").column(0).to_pylist()
    assert v.version in got and len(got) == 2
