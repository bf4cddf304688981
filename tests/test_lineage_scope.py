"""repo.lineage reads only what its answer needs, and answers as the whole-root catalog does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from catalog_data import make_table

from dload_arrow import Repository
from dload_arrow.catalog.lineage import Lineage

SMALL = {"progress": False, "row_group_size": 2_000, "shard_size": 4_000}

# The lineage view over the whole root: what ancestors/descendants answered before they
# walked from the one version asked.
_VIEW = """
SELECT l.depth, l.relation, l.related_name AS name, l.related_version AS version,
       v.num_rows
FROM lineage AS l
LEFT JOIN dload_raw_versions AS v ON v.name = l.related_name AND v.version = l.related_version
WHERE l.name = $name AND l.version = $version AND l.direction = $direction
ORDER BY l.depth, l.related_name, l.related_version
"""


def _open(root: str, cache_dir: str) -> Repository:  # what a new `dload log` process does
    return Repository.open(root, cache_dir=cache_dir, cache_budget="unlimited")


def _count_calls(obj: Any, method: str, key: Callable[..., Any]) -> Counter[Any]:
    """Wrap ``obj.method`` (the real object's) to count its calls by ``key(*args)``."""
    calls: Counter[Any] = Counter()
    real = getattr(obj, method)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[key(*args)] += 1
        return real(*args, **kwargs)

    setattr(obj, method, counted)
    return calls


def _reads(repo: Repository) -> tuple[Counter[Any], Counter[Any]]:
    """Storage reads by path, and manifests asked of the manifest cache by dataset."""
    return (_count_calls(repo.storage, "read", lambda path, *a: path),
            _count_calls(repo.manifests, "get", lambda name, *a: name))


def _two_datasets(root: str, cache_dir: str) -> None:
    repo = _open(root, cache_dir)
    repo.commit("a", make_table(100), **SMALL)
    repo.append("a", make_table(50, start=100), progress=False)
    for i in range(3):
        repo.commit("other", make_table(30 + i, prefix="o", seed=i), **SMALL)


def test_lineage_does_not_read_another_datasets_manifests(local_root: str, cache_dir: str,
                                                          tmp_path: Path) -> None:
    _two_datasets(local_root, cache_dir)
    cold = _open(local_root, str(tmp_path / "cold"))  # a machine that never saw the root
    paths, asked = _reads(cold)
    first = cold.lineage("a")
    # the other's versions are summarized once per machine (their parents could name a)
    assert asked["other"] == 3 and cold.catalog.summaries.built == 5
    assert all(n == 1 for p, n in paths.items() if "/manifests/" in p)
    assert not [p for p in paths if p.startswith(("datasets/other/log/", "datasets/other/refs"))]
    paths.clear()
    asked.clear()
    assert cold.lineage("a").to_dict() == first.to_dict()
    assert not asked["other"]
    assert not [p for p in paths if "/manifests/" in p]

    warm = _open(local_root, str(tmp_path / "cold"))  # a later process on that machine
    paths, asked = _reads(warm)
    again = warm.lineage("a")
    assert again.to_dict() == first.to_dict()
    assert asked["other"] == 0 and warm.catalog.summaries.built == 0
    assert not [p for p in paths if p.startswith("datasets/other/")]
    assert not [p for p in paths if "/manifests/" in p]
    # SQL over the catalog still reads every manifest (once per process, from the cache)
    warm.sql("SELECT count(*) FROM shards")
    assert asked["other"] == 3


def test_a_new_version_elsewhere_is_summarized_once(local_root: str, cache_dir: str) -> None:
    _two_datasets(local_root, cache_dir)
    repo = _open(local_root, cache_dir)
    repo.lineage("a")
    v = repo.commit("other", make_table(7, prefix="n"), **SMALL).version
    repo.lineage("a")
    assert repo.catalog.summaries.built == 6
    again = _open(local_root, cache_dir)
    _, asked = _reads(again)
    again.lineage("a")
    assert asked["other"] == 0
    repo.rm("other", v)
    assert _open(local_root, cache_dir).lineage("a").to_dict() == repo.lineage("a").to_dict()


def test_a_damaged_summary_file_is_rebuilt(local_root: str, cache_dir: str) -> None:
    _two_datasets(local_root, cache_dir)
    first = _open(local_root, cache_dir).lineage("a")
    path = next(Path(cache_dir, "catalog").glob("*/versions.json"))
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"num_rows":150', b'"num_rows":151'))
    fresh = _open(local_root, cache_dir)
    assert fresh.lineage("a").to_dict() == first.to_dict()
    assert fresh.catalog.summaries.built == 5
    assert path.read_bytes() == data


def _chains(repo: Repository) -> None:
    """Appends and derives across datasets, a diamond, a copy under another name (shares
    shards, no lineage), a removed version and an unrelated dataset."""
    a1 = repo.commit("a", make_table(120), meta={"k": 1}, **SMALL).version
    a2 = repo.append("a", make_table(40, start=120), progress=False).version
    repo.append("a", make_table(40, start=160), progress=False)
    b1 = repo.commit("b", make_table(60, prefix="b"), **SMALL, parents=[
        {"name": "a", "version": a2, "relation": "derive", "fingerprint": "f" * 16}]).version
    b2 = repo.append("b", make_table(20, start=60, prefix="b"), progress=False).version
    repo.commit("c", make_table(30, prefix="c"), **SMALL, parents=[
        {"name": "b", "version": b2, "relation": "derive"},
        {"name": "a", "version": a1, "relation": "sample"}])
    repo.commit("d", make_table(120), **SMALL)  # a copy of a@a1's rows: the same shards
    e1 = repo.commit("e", make_table(10, prefix="e"), **SMALL, parents=[
        {"name": "b", "version": b1, "relation": "derive"},
        {"name": "c", "version": repo.resolve("c", None), "relation": "derive"}]).version
    repo.append("e", make_table(5, start=10, prefix="e"), progress=False)
    repo.tag("e", e1, "first")
    repo.rm("b", b1)
    repo.commit("z", make_table(9, prefix="z"), **SMALL)


def _expected(repo: Repository, name: str, version: str) -> dict[str, Any]:
    both = {"name": name, "version": version}
    catalog = repo.catalog

    def view(direction: str) -> pa.Table:
        return catalog.sql(_VIEW, {**both, "direction": direction})

    return Lineage(
        name=name, version=version, ancestors=view("ancestor"), descendants=view("descendant"),
        versions=catalog.query("dataset_versions", {"name": name}),
        moves=catalog.query("ref_moves", {"name": name}),
        shared=catalog.query("shared_shards", both),
    ).to_dict()


def test_lineage_answers_as_the_whole_root_catalog(repo: Repository) -> None:
    _chains(repo)
    versions = repo.sql("SELECT name, version FROM versions ORDER BY name, version").to_pylist()
    assert len(versions) == 9  # b1 was removed
    seen: dict[str, int] = Counter()
    for v in versions:
        got = repo.lineage(v["name"], v["version"]).to_dict()
        assert got == _expected(repo, v["name"], v["version"]), v
        both = {"name": v["name"], "version": v["version"]}  # the statements on the catalog
        assert repo.catalog.query("ancestors", both).to_pylist() == got["ancestors"]
        assert repo.catalog.query("descendants", both).to_pylist() == got["descendants"]
        for key in ("ancestors", "descendants", "shared", "moves"):
            seen[key] += bool(got[key])
    assert all(seen[k] >= 3 for k in ("ancestors", "descendants", "shared")), seen
    e = repo.lineage("e", "first")
    nearest = [(r["depth"], r["relation"], r["name"], r["num_rows"])
               for r in e.ancestors.to_pylist()][:2]
    assert nearest == [(1, "derive", "b", None), (1, "derive", "c", 30)]
    first = repo.sql("SELECT version FROM versions WHERE name = 'a' ORDER BY num_rows")
    down = repo.lineage("a", first.column("version")[0].as_py())
    assert {r["other_name"] for r in down.shared.to_pylist()} >= {"a", "d"}
    # b1 was removed, but its parents stayed on record (store/removals.py): a reaches b
    assert {r["name"] for r in down.descendants.to_pylist()} == {"a", "b", "c", "e"}
