"""repo.pull, cache_status and cache_clear."""

from __future__ import annotations

import os

import pytest

from dload_arrow import InfeasiblePlanError, Repository
from dload_arrow.read.cache import Cache


def _commit(repo: Repository, name: str = "d", n: int = 500) -> None:
    samples = [(f"k{i:05d}", {"x": i, "blob": os.urandom(40)}) for i in range(n)]
    repo.commit(name, samples, shard_size=3000, row_group_size=800, progress=False)


def test_pull_materialises_a_version_and_is_resumable(s3_root: str, cache_dir: str,
                                                      s3_server) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    m = repo.manifest("d")
    cache = Cache(cache_dir, "unlimited")
    first = m.shards[0]
    cache.acquire(repo.storage, first.digest, first.bytes).release()  # an interrupted pull
    s3_server.clear()
    report = repo.pull("d", progress=False)
    assert report.shards_total == len(m.shards)
    assert report.shards_fetched == len(m.shards) - 1
    assert report.bytes_fetched == m.num_bytes - first.bytes
    assert s3_server.count("GET", contains=first.digest) == 0
    assert all(cache.is_cached(s.digest, s.bytes) for s in m.shards)
    again = repo.pull("d", progress=False)
    assert again.shards_fetched == 0 and again.bytes_fetched == 0
    assert "in the cache" in str(again)


def test_pull_that_cannot_fit_is_refused_before_any_request(s3_root: str, cache_dir: str,
                                                            s3_server) -> None:
    _commit(Repository.open(s3_root, cache_dir=cache_dir + "-w", cache_budget="unlimited"))
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="4KB")
    s3_server.clear()
    with pytest.raises(InfeasiblePlanError, match="raise the cache budget"):
        repo.pull("d", progress=False)
    assert s3_server.count("GET", contains="/shards/") == 0  # only the ref and manifest read
    assert s3_server.count("HEAD", contains="/shards/") == 0


def test_pull_of_a_local_root_copies_nothing(repo: Repository, cache_dir: str) -> None:
    _commit(repo)
    report = repo.pull("d", progress=False)
    assert report.in_place and report.shards_fetched == 0
    assert "read in place" in str(report)
    assert not os.path.isdir(os.path.join(cache_dir, "shards")) or not any(
        f for _, _, fs in os.walk(os.path.join(cache_dir, "shards")) for f in fs)


def test_cache_status_reports_residency_and_clear_frees_unheld(memory_root: str,
                                                               cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="10MB")
    _commit(repo, "a")
    _commit(repo, "b", n=300)
    repo.pull("a", progress=False)
    ma, mb = repo.manifest("a"), repo.manifest("b")
    status = repo.cache_status()
    assert status.budget_bytes == 10 * 10**6 and status.budget == "10.0 MB"
    assert status.used_bytes == ma.num_bytes
    res = {r.name: r for r in status.datasets}
    assert res["a"].cached_bytes == res["a"].total_bytes == ma.num_bytes
    assert res["a"].fraction == 1.0
    assert res["b"].cached_bytes == 0 and res["b"].total_bytes == mb.num_bytes
    text = str(status)
    assert "a" in text and f"{len(ma.shards)}/{len(ma.shards)}" in text
    assert status.to_dict()["datasets"][0]["name"] in ("a", "b")
    shard = ma.shards[0]
    hold = repo.read_context.cache().acquire(repo.storage, shard.digest, shard.bytes)
    assert repo.cache_status().held_shards == 1
    manifests = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(
        os.path.join(repo.settings.cache_dir, "manifests")) for f in fs)  # cleared too
    assert repo.cache_clear() == ma.num_bytes - shard.bytes + manifests
    assert repo.cache_status().used_bytes == shard.bytes
    hold.release()
    assert repo.cache_clear() == shard.bytes
    assert repo.cache_status().used_bytes == 0


def test_cache_status_with_a_smaller_budget_deletes_nothing(
        memory_root: str, cache_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_run import runner

    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    repo.pull("d", progress=False)
    total = repo.manifest("d").num_bytes
    run = runner(capsys)
    r = run("cache", "status", "--root", memory_root, "--cache-dir", cache_dir,
            "--cache-budget", "1KB", "--json")
    assert r.json["used_bytes"] == total and r.json["budget_bytes"] == 1000
    text = run("cache", "status", "--root", memory_root, "--cache-dir", cache_dir,
               "--cache-budget", "1KB").out
    assert "over the budget by" in text and "evicts unheld shards down to it" in text
    small = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="1KB")
    assert small.cache_status().used_bytes == total  # a report, not a trim
    assert Cache(cache_dir, "unlimited").used_bytes() == total
    small.read_context.cache()  # a reader opening the cache with that budget does trim
    assert Cache(cache_dir, "unlimited").used_bytes() <= 1000


def test_a_pull_that_readers_holding_the_budget_leave_no_room_for_is_refused(
        memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo, "a", 300)
    _commit(repo, "b", 300)
    a, b = repo.manifest("a"), repo.manifest("b")
    budget = a.num_bytes + b.num_bytes // 2  # b alone fits, b beside a held a does not
    small = Repository.open(memory_root, cache_dir=cache_dir, cache_budget=budget)
    cache = small.read_context.cache()
    holds = [cache.acquire(small.storage, s.digest, s.bytes) for s in a.shards]  # a reader
    try:
        with pytest.raises(InfeasiblePlanError, match="held by readers running now"):
            small.pull("b", progress=False)
    finally:
        for h in holds:
            h.release()
    report = small.pull("b", progress=False)  # the reader is done: it fits
    assert report.shards_resident == report.shards_total and "in the cache" in str(report)


def test_cache_clear_also_removes_cached_footers(memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    first = repo.dataset("d")[0]  # random access caches the shard's footer on disk
    footers = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache_dir, "footers"))
               for f in fs]
    assert footers
    manifests = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache_dir,
                                                                          "manifests"))
                 for f in fs]
    assert manifests
    freed = repo.cache_clear()
    assert freed >= sum(1 for _ in footers) and not any(os.path.exists(f) for f in footers)
    assert not any(os.path.exists(f) for f in manifests)  # (QA cache 43: never freed)
    again = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    assert again.dataset("d")[0] == first  # fetched again when needed


def test_cache_clear_leaves_a_manifest_being_written_and_status_of_a_local_root(
        memory_root: str, local_root: str, cache_dir: str) -> None:
    import dataclasses

    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    Repository.open(memory_root, cache_dir=cache_dir).dataset("d")  # its manifest cached
    folder = next(d for d, _, fs in os.walk(os.path.join(cache_dir, "manifests")) if fs)
    writing = os.path.join(folder, ".0123456789ab.x1y2.tmp")  # another process's, mid-write
    with open(writing, "wb") as f:
        f.write(b"partial")
    repo.cache_clear()
    assert os.path.exists(writing)  # (review 44: only ".tmp-" names were left alone)
    local = Repository.open(local_root, cache_dir=cache_dir + "-l").cache_status()
    assert dataclasses.asdict(local)["limit_bytes"] == local.budget_bytes  # no sentinel
