"""Many small appends (QA scale62): the catalog keeps each version's rows, not its manifest
(holding every manifest made memory grow with the square of the appends); the shards view
stays current however a query reaches it; a forked child queries (QA review63b)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from dload_arrow import Repository
from dload_arrow.store import manifest_cache


def _appended(repo: Repository, n: int) -> None:
    repo.commit("d", [("k0", {"x": 0})], progress=False)
    for i in range(1, n):
        repo.append("d", [(f"k{i}", {"x": i})], progress=False)


def _held(repo: Repository) -> int:
    return len(repo.manifests._memory)


def test_the_catalog_holds_no_manifest(repo: Repository,
                                                     local_root: str, cache_dir: str) -> None:
    _appended(repo, 12)
    fresh = Repository.open(local_root, cache_dir=cache_dir)
    assert fresh.sql("select count(*) from versions").column(0).to_pylist() == [12]
    assert fresh.sql("select sum(num_shards) from datasets").column(0).to_pylist() == [12]
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


def test_shards_reached_without_naming_them_are_current(repo: Repository) -> None:
    repo.commit("d", [("k0", {"x": 0})], progress=False)
    q = "SELECT count(*) FROM query_table($t)"
    assert repo.sql(q, t="shards").column(0).to_pylist() == [1]
    repo.append("d", [("k1", {"x": 1})], progress=False)
    assert repo.sql(q, t="shards").column(0).to_pylist() == [3]


def test_the_connection_after_an_rm(repo: Repository) -> None:
    _appended(repo, 2)
    v1 = repo.versions("d")[-1].version if repo.versions("d")[-1].version != repo.dataset(
        "d").version else repo.versions("d")[0].version
    repo.sql("select 1")
    repo.rm("d", v1)
    con: Any = repo.catalog.connection
    assert con.execute("select count(*) from shards").fetchall() == [(3,)]  # as listed then
    got = repo.catalog.sql("select count(*) from versions", refresh=False)
    assert got.column(0).to_pylist() == [2]
    assert repo.sql("select count(*) from shards").column(0).to_pylist() == [2]


def _child(repo: Repository, q: Any) -> None:
    q.put(repo.sql("select count(*) from shards").column(0).to_pylist())


def test_a_forked_child_queries_the_catalog_it_inherited(repo: Repository) -> None:
    import multiprocessing as mp

    _appended(repo, 2)
    assert repo.sql("select count(*) from shards").column(0).to_pylist() == [3]
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_child, args=(repo, q))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and q.get(timeout=5) == [3]


@pytest.mark.parametrize("connected", [True, False])
def test_a_child_forked_while_another_thread_queries_can_query(repo: Repository,
                                                               connected: bool) -> None:
    """QA review63d: the child inherited the catalog's lock held by a thread it lacks (and
    review63e: in the repository's first query, before it connected)."""
    import threading

    _appended(repo, 2)
    if connected:
        repo.sql("select 1")
    held, done = threading.Event(), threading.Event()

    def query_in_progress() -> None:
        with repo.catalog._lock:  # as a thread inside repo.sql() holds it
            held.set()
            done.wait(30)

    thread = threading.Thread(target=query_in_progress)
    thread.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            signal.alarm(20)
            ok = repo.sql("select count(*) from versions").column(0).to_pylist() == [2]
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        done.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0
