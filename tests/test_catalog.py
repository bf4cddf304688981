"""The catalog views over manifests, refs and log; the local manifest copy; lineage."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_data import make_history, make_table

from dload_arrow import NotFoundError, Repository
from dload_arrow.store.names import manifest_path


def test_views_describe_the_history(repo: Repository) -> None:
    h = make_history(repo)
    ds = {r["name"]: r for r in repo.sql("SELECT * FROM datasets").to_pylist()}
    assert set(ds) == {"a", "b", "c"}
    assert ds["a"]["latest"] == h.a2 and ds["a"]["num_versions"] == 2
    assert ds["a"]["num_rows"] == 500 and ds["a"]["tags"] == ["v1"]

    versions = repo.sql("SELECT name, version, num_rows, refs, parents, meta FROM versions "
                        "WHERE name = 'a' ORDER BY num_rows").to_pylist()
    assert [(v["version"], v["num_rows"], v["refs"]) for v in versions] == [
        (h.a1, 400, ["v1"]), (h.a2, 500, ["latest"])]
    assert versions[1]["parents"] == [h.a1]
    assert '"source"' in versions[0]["meta"]

    # a@v2 lists a@v1's shards plus its own: the shared digests are stored once.
    shared = repo.sql(
        "SELECT count(*) AS n FROM shards WHERE name = 'a' AND version = $v "
        "AND versions_sharing = 2", v=h.a2).column("n")[0].as_py()
    assert shared == repo.manifest("a", h.a1).table.num_rows
    refs = repo.sql("SELECT name, ref, version FROM refs ORDER BY name, ref").to_pylist()
    assert {"name": "a", "ref": "v1", "version": h.a1} in refs
    actions = repo.sql("SELECT action FROM log WHERE name = 'a' ORDER BY time").column(
        "action").to_pylist()
    assert actions == ["commit", "tag", "append"]
    edges = repo.sql("SELECT name, parent_name, relation, fingerprint FROM parents "
                     "ORDER BY name").to_pylist()
    assert edges == [
        {"name": "a", "parent_name": "a", "relation": "append", "fingerprint": None},
        {"name": "b", "parent_name": "a", "relation": "derive", "fingerprint": "f" * 16},
        {"name": "c", "parent_name": "b", "relation": "derive", "fingerprint": None},
    ]


def test_catalog_sees_commits_made_after_it_was_opened(repo: Repository) -> None:
    repo.commit("x", make_table(10), progress=False)
    assert repo.sql("SELECT count(*) AS n FROM versions").column("n")[0].as_py() == 1
    repo.commit("y", make_table(10, prefix="y"), progress=False)
    assert repo.sql("SELECT count(*) AS n FROM versions").column("n")[0].as_py() == 2


def test_lineage_follows_derives_and_appends_both_ways(repo: Repository) -> None:
    h = make_history(repo)
    lin = repo.lineage("c")
    assert lin.version == h.c
    assert [(r["depth"], r["relation"], r["name"], r["version"]) for r in
            lin.ancestors.to_pylist()] == [
        (1, "derive", "b", h.b), (2, "derive", "a", h.a2), (3, "append", "a", h.a1)]
    down = repo.lineage("a", "v1")
    assert [(r["depth"], r["relation"], r["name"], r["version"]) for r in
            down.descendants.to_pylist()] == [
        (1, "append", "a", h.a2), (2, "derive", "b", h.b), (3, "derive", "c", h.c)]
    assert [r["name"] for r in down.children] == ["a"]
    assert [r["version"] for r in lin.parents] == [h.b]
    moves = down.moves.to_pylist()
    assert [(m["ref"], m["action"], m["previous"], m["version"]) for m in moves] == [
        ("latest", "commit", None, h.a1), ("v1", "tag", None, h.a1),
        ("latest", "append", h.a1, h.a2)]
    shared = {(r["version"], r["other_version"]): r["shared_shards"]
              for r in down.shared.to_pylist() + repo.lineage("a").shared.to_pylist()}
    assert shared[(h.a1, h.a2)] == shared[(h.a2, h.a1)] == len(repo.manifest("a", h.a1).shards)
    assert {r["version"] for r in down.shared.to_pylist()} == {h.a1}  # only the one asked
    text = str(down)
    assert "-> 2 derive  b @" in text and "v1" in text and "shares" in text
    assert lin.to_dict()["ancestors"][0]["name"] == "b"


def test_lineage_shows_a_removed_parent(repo: Repository) -> None:
    h = make_history(repo)
    repo.rm("a", h.a1)
    lin = repo.lineage("b")
    rows = {r["version"]: r["num_rows"] for r in lin.ancestors.to_pylist()}
    assert rows == {h.a2: 500, h.a1: None}
    assert "removed" in str(lin)


def test_manifests_are_fetched_once_per_machine(local_root: str, cache_dir: str) -> None:
    first = Repository.open(local_root, cache_dir=cache_dir)
    make_history(first)
    first.sql("SELECT * FROM versions")
    assert first.catalog.manifests.fetched == 4
    first.sql("SELECT * FROM versions")
    assert first.catalog.manifests.fetched == 4
    again = Repository.open(local_root, cache_dir=cache_dir)  # a new process would do this
    again.sql("SELECT * FROM versions")
    assert again.catalog.manifests.fetched == 0
    copies = sorted(Path(cache_dir, "manifests").glob("*/*.arrow"))
    assert len(copies) == 4


def test_a_damaged_manifest_copy_is_fetched_again(local_root: str, cache_dir: str) -> None:
    repo = Repository.open(local_root, cache_dir=cache_dir)
    v = repo.commit("x", make_table(20), progress=False).version
    repo.sql("SELECT * FROM versions")
    copy = next(Path(cache_dir, "manifests").glob(f"*/{v}.arrow"))
    copy.write_bytes(b"garbage" + copy.read_bytes())
    fresh = Repository.open(local_root, cache_dir=cache_dir)
    got = fresh.sql("SELECT num_rows FROM versions").column("num_rows").to_pylist()
    assert got == [20]
    assert fresh.catalog.manifests.fetched == 1


def test_catalog_on_s3_reads_each_manifest_once_and_samples_via_cache(
    s3_repo: Repository, s3_server, cache_dir: str,  # type: ignore[no-untyped-def]
) -> None:
    s3_server.clear()
    h = make_history(s3_repo)  # appends read a1's manifest: fetched here, once
    path = manifest_path("a", h.a1)
    assert s3_server.count("GET", contains=path) == 1
    s3_server.clear()
    s3_repo.sql("SELECT * FROM versions")
    s3_repo.sql("SELECT * FROM versions")
    other = Repository.open(s3_repo.storage.url, cache_dir=cache_dir,
                            cache_budget="unlimited")
    other.sql("SELECT * FROM lineage")
    assert s3_server.count("GET", contains=path) == 0  # never again on this machine
    n = other.sql("SELECT count(*) AS n FROM samples('a') WHERE label < 3").column("n")
    assert n.to_pylist() == [150]
    shard_gets = s3_server.count("GET", contains="shards/")
    assert 0 < shard_gets <= len(other.manifest("a").shards)
    other.sql("SELECT count(*) FROM samples('a')")  # warm: no new shard downloads
    assert s3_server.count("GET", contains="shards/") == shard_gets


def test_samples_refuses_a_version_that_cannot_fit_the_cache(
    s3_root: str, cache_dir: str, s3_server,  # type: ignore[no-untyped-def]
) -> None:
    from dload_arrow.errors import InfeasiblePlanError

    big = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    make_history(big)
    tiny = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="1KB")
    s3_server.clear()
    with pytest.raises(InfeasiblePlanError, match="budget"):
        tiny.sql("SELECT count(*) FROM samples('a')")
    assert s3_server.count("GET", contains="shards/") == 0


def test_sql_and_where_on_every_backend(any_repo: Repository) -> None:
    any_repo.commit("x", make_table(120), progress=False, row_group_size=2_000)
    n = any_repo.sql("SELECT count(*) AS n FROM samples('x') WHERE label = 1").column("n")
    view = any_repo.dataset("x").where("label = 1")
    assert n.to_pylist() == [view.to_arrow().num_rows] == [50]
    assert view.to_polars().collect().height == 50
    assert any_repo.sql("SELECT num_rows FROM datasets").column(0).to_pylist() == [120]


def test_repository_and_views_pickle_after_queries(repo: Repository) -> None:
    import pickle

    repo.commit("x", make_table(60), progress=False)
    view = repo.dataset("x").where("label = 0")
    repo.sql("SELECT * FROM versions")
    view.to_polars()  # holds shard files while the view lives
    copy = pickle.loads(pickle.dumps(view))  # e.g. sent to a DataLoader worker by spawn
    assert copy.to_arrow().equals(view.to_arrow())
    n = copy.repo.sql("SELECT count(*) AS n FROM samples('x') WHERE label = 0").column("n")
    assert n.to_pylist() == [50]


def test_samples_of_a_removed_version_is_refused(repo: Repository) -> None:
    from dload_arrow.errors import NotFoundError

    h = make_history(repo)
    assert repo.sql(f"SELECT count(*) AS n FROM samples('a', '{h.a1}')").column(0)[0].as_py()
    repo.rm("a", h.a1)
    with pytest.raises(NotFoundError, match="removed"):
        repo.sql(f"SELECT count(*) FROM samples('a', '{h.a1}')")


def test_a_version_of_another_root_does_not_open_through_a_shared_cache(
        tmp_path: Path, cache_dir: str) -> None:
    a = Repository.open(tmp_path / "a", cache_dir=cache_dir)
    b = Repository.open(tmp_path / "b", cache_dir=cache_dir)
    va = a.commit("ds", make_table(50), progress=False).version
    b.commit("ds", make_table(5), progress=False)
    assert a.dataset("ds", va).num_rows == 50  # A's manifest is now in the shared cache
    with pytest.raises(NotFoundError, match="no manifest under"):
        b.dataset("ds", va)
    assert Repository.open(tmp_path / "a", cache_dir=cache_dir).dataset("ds", va).num_rows == 50
