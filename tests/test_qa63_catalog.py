"""Many small appends (QA scale62): a query that does not read the `shards` view neither
builds its table (a row per shard of every version: the square of the appends) nor holds
every version's manifest; what reads it sees it current, through views a caller made too."""

from __future__ import annotations

from typing import Any

from dload_arrow import Repository
from dload_arrow.store import manifest_cache


def _appended(repo: Repository, n: int) -> None:
    repo.commit("d", [("k0", {"x": 0})], progress=False)
    for i in range(1, n):
        repo.append("d", [(f"k{i}", {"x": i})], progress=False)


def _held(repo: Repository) -> int:
    return len(repo.manifests._memory)


def test_queries_without_shards_build_no_shard_table(repo: Repository,
                                                     local_root: str, cache_dir: str) -> None:
    _appended(repo, 12)
    fresh = Repository.open(local_root, cache_dir=cache_dir)
    assert fresh.sql("select count(*) from versions").column(0).to_pylist() == [12]
    assert fresh.sql("select sum(num_shards) from datasets").column(0).to_pylist() == [12]
    assert fresh.catalog.snapshotter._shards is None  # (num_shards is another view's column)
    assert _held(fresh) == 0  # read for their rows, not kept: the memory stays flat
    got = fresh.sql("SELECT count(*) FROM Shards where name = 'd'").column(0).to_pylist()
    assert got == [sum(range(1, 13))] and _held(fresh) == 0
    assert fresh.sql("select count(*) from versions").column(0).to_pylist() == [12]
    sql = "select count(*) from shards s join versions v using (name, version)"
    assert fresh.sql(sql).column(0).to_pylist() == got


def test_shards_stay_current_for_views_a_caller_made(repo: Repository) -> None:
    _appended(repo, 2)
    repo.sql("create temp view mine as select count(*) as n from shards")
    assert repo.sql("select n from mine").column(0).to_pylist() == [3]
    repo.append("d", [("k9", {"x": 9})], progress=False)
    assert repo.sql("select count(*) from versions").column(0).to_pylist() == [3]
    assert repo.sql("select n from mine").column(0).to_pylist() == [6]  # not the old table


def test_the_connection_reads_current_shards(repo: Repository) -> None:
    _appended(repo, 2)
    repo.sql("select 1")
    con: Any = repo.catalog.connection
    assert con.execute("select count(*) from shards").fetchall() == [(3,)]
    repo.append("d", [("k9", {"x": 9})], progress=False)
    repo.sql("select 1")  # a refresh without the shards' table: the connection's still current
    assert con.execute("select count(*) from shards").fetchall() == [(6,)]
    assert con.execute("select count(*) from versions").fetchall() == [(3,)]


def test_the_manifest_cache_keeps_what_it_is_asked_to(repo: Repository) -> None:
    _appended(repo, 2)
    cache = manifest_cache.ManifestCache(repo.storage, repo.manifests.folder.parent.parent)
    vid = repo.dataset("d").version
    assert cache.get("d", vid, keep=False).version == vid and not cache._memory
    assert cache.get("d", vid).version == vid and list(cache._memory) == [vid]
