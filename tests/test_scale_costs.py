"""Costs that grew with a root's history (QA scale53), checked by what they keep and build,
not by time: many appended versions, and the footers and manifests a process holds."""

from __future__ import annotations

import pytest

from dload_arrow import Repository
from dload_arrow.store import manifest_cache


def _appended(repo: Repository, versions: int) -> None:
    repo.commit("a", [(f"k{0:05d}", {"x": 0})], progress=False)
    for i in range(1, versions):
        repo.append("a", [(f"k{i:05d}", {"x": i})], progress=False)


def test_an_appending_process_keeps_a_bounded_set_of_manifests(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every parent manifest an append read stayed in memory (1,000 appends: 570 MB)."""
    _appended(repo, 3)
    cost = manifest_cache._cost
    one = cost(repo.dataset("a").manifest)
    monkeypatch.setattr(manifest_cache, "MEMORY_BYTES", 5 * one)
    for i in range(30):
        repo.append("a", [(f"m{i:03d}", {"x": i})], progress=False)
    cache = repo.manifests
    assert len(cache._memory) < 12 and cache._memory_bytes <= 5 * one + \
        max(cost(m) for m in cache._memory.values())
    assert cache._memory_bytes == sum(cost(m) for m in cache._memory.values())
    ids = repo._version_ids("a")
    assert len(ids) == 33
    rows = sorted(repo.manifests.get("a", v).num_rows for v in ids)  # evicted: read again
    assert rows == list(range(1, 34))


def test_small_manifests_are_counted_at_what_they_hold(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small manifest's table is ~200 bytes, but a parsed one holds ~30 KB: charged its
    table only, 10,000 commits kept every one (QA cliffs56: +320 MB). Charged a parsed
    manifest's overhead too, and at most MEMORY_ITEMS are kept."""
    monkeypatch.setattr(manifest_cache, "MEMORY_ITEMS", 8)
    for i in range(20):
        repo.commit("c", [(f"k{i}", {"x": i})], progress=False)
    cache = repo.manifests
    assert 1 <= len(cache._memory) <= 8
    assert cache._memory_bytes >= len(cache._memory) * 32 * 2**10
    assert repo.dataset("c").num_rows == 1  # evicted ones are read again


def test_the_catalog_over_many_versions_never_builds_a_shard_list(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    """`select 1`, `status` and `cache status` built a Python object per (version, shard)
    (1,500 appended versions: 17 s and 1.9 GB): they read the manifests' Arrow columns."""
    _appended(repo, 40)
    from dload_arrow.store.manifest import Manifest

    def refused(self: Manifest) -> None:
        raise AssertionError("Manifest.shards built for the catalog")

    monkeypatch.setattr(Manifest, "shards", property(refused))
    fresh = Repository.open(repo.storage.url, cache_dir=repo.settings.cache_dir)
    got = fresh.sql("select count(*) as n, sum(rows) as r from shards where name = 'a'")
    assert got.column("n").to_pylist() == [sum(range(1, 41))]  # version i: i one-row shards
    assert got.column("r").to_pylist() == [sum(range(1, 41))]
    status = fresh.cache_status()
    assert len(status.datasets) == 40
