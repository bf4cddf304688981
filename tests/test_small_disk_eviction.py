"""A disk filled by the cache's own shards of another dataset is not full: the planner counts
the unheld shards the cache may evict (a notebook reading one dataset after another on a
small disk was refused with "free disk space under the cache dir")."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from small_disk import SmallDisk, du

from dload_arrow import InfeasiblePlanError, Repository


def _commit(root: str, name: str) -> None:
    table = pa.table({"k": list(range(400)), "b": [os.urandom(1000) for _ in range(400)]})
    Repository.open(root).commit(name, table, shard_size="100KB", progress=False)


def test_a_second_dataset_evicts_the_first_instead_of_being_refused(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit(memory_root, "a")
    _commit(memory_root, "b")
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    disk = SmallDisk(cache, 650_000)
    monkeypatch.setattr(os, "statvfs", disk)
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    assert repo.dataset("b").to_polars().collect().height == 400
    plan = repo.dataset("a").plan(full_shuffle=True)
    assert plan.resident_bytes - plan.cached_bytes > plan.free_disk_bytes  # the disk is full
    assert plan.feasible and plan.evictable_bytes >= repo.dataset("b").num_bytes
    got = repo.dataset("a").to_polars().collect()
    assert got.height == 400 and disk.peak <= disk.capacity and du(cache) <= disk.capacity


def test_a_dataset_bigger_than_the_whole_disk_is_still_refused_for_its_disk(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit(memory_root, "a")
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 300_000))
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    with pytest.raises(InfeasiblePlanError) as e:  # bigger than the whole disk
        repo.dataset("a").to_polars()
    text = str(e.value)
    assert "more on disk" in text and "can evict" not in text, text
    assert "free disk space" in text and text.count("Fixes: ") == 1
    assert "Fixes: or " not in text, text


def test_shards_another_reader_holds_are_not_counted_as_room(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held shards cannot be evicted: counting them made the plan feasible and the read then
    waited out DLOAD_CACHE_WAIT (review 42)."""
    import time

    monkeypatch.setenv("DLOAD_CACHE_WAIT", "30")
    _commit(memory_root, "a")
    _commit(memory_root, "b")
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 650_000))
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    b = repo.dataset("b")
    frame = b.to_polars()  # holds b's shards while b lives
    plan = repo.dataset("a").plan(full_shuffle=True)
    assert not plan.feasible and plan.evictable_bytes == 0
    t0 = time.monotonic()
    with pytest.raises(InfeasiblePlanError, match="free disk space"):
        repo.dataset("a").to_polars()
    assert time.monotonic() - t0 < 10
    assert frame.collect().height == 400
    del frame, b
    import gc

    gc.collect()
    assert repo.dataset("a").to_polars().collect().height == 400  # released: room again


def test_a_pipelines_check_counts_room_as_its_plan_does(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With one of the dataset's own cached shards held by another reader, check() took the
    held bytes off the evictable ones twice and refused what plan() and the read allow
    (review 43)."""
    import gc

    monkeypatch.setenv("DLOAD_CACHE_WAIT", "30")
    _commit(memory_root, "a")
    table = pa.table({"k": list(range(200)), "b": [os.urandom(1000) for _ in range(200)]})
    Repository.open(memory_root).commit("c", table, shard_size="100KB", progress=False)
    cache = str(tmp_path / "c")
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    assert repo.dataset("c").to_polars().collect().height == 200  # c cached, unheld
    assert repo.dataset("a").where("k < 50").to_polars().collect().height == 50  # a's first
    gc.collect()
    a = repo.dataset("a")
    first = a.manifest.shards[0]
    other = repo.read_context.cache().acquire(repo.storage, first.digest, first.bytes)
    try:  # another reader holds a's first shard; the disk has 100 KB free
        monkeypatch.setattr(os, "statvfs", SmallDisk(cache, du(cache) + 100_000))
        plan = a.plan(full_shuffle=True)
        assert plan.resident_bytes - plan.cached_bytes > plan.free_disk_bytes
        pipe = a.shuffle(seed=1, full=True)
        assert plan.feasible and pipe.check().feasible
        assert sum(1 for _ in pipe) == 400
    finally:
        other.release()


def test_an_automatic_window_fits_the_room_other_readers_leave_on_the_disk(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame of another dataset holds its shards: the default read-ahead was sized as if
    they were room, refused, and told the user to lower a prefetch they never set (QA cache
    43); prefetch=0 read it fine."""
    monkeypatch.setenv("DLOAD_CACHE_WAIT", "30")
    _commit(memory_root, "a")
    _commit(memory_root, "b")
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 700_000))
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    a = repo.dataset("a")
    frame = a.to_polars()  # holds a's shards while a lives
    b = repo.dataset("b")
    plan = b.plan()
    assert plan.feasible and plan.window_shards >= 1, plan
    assert sum(x.num_rows for x in b.batches()) == 400
    assert sorted(s["k"] for s in b.shuffle(seed=2)) == list(range(400))
    with pytest.raises(InfeasiblePlanError, match="lower prefetch"):
        b.plan(prefetch=3).check()  # asked for: reported, not shrunk
    assert frame.collect().height == 400


def test_cache_status_says_what_the_disk_can_hold(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """On a disk smaller than the budget, status said "used of unlimited" while plans used
    what the disk can hold (QA cache 43)."""
    import dataclasses

    from dload_arrow.cli.data import cache_text

    _commit(memory_root, "a")
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 650_000))
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    status = repo.cache_status()
    limit = status.to_dict()["limit_bytes"]
    assert isinstance(limit, int) and limit < 650_000
    assert limit == repo.dataset("a").plan().budget_bytes
    assert "unlimited (its disk holds at most" in str(status)
    cache_text(dataclasses.asdict(status), residency=False)  # (dload cache status)
    assert "used of unlimited (its disk holds at most" in capsys.readouterr().out


def test_sources_read_at_once_share_the_disks_room(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each source of a mix shrank its automatic window to the whole free disk; together they
    were refused with "lower prefetch", which a pipeline cannot set (review 44)."""
    import dload_arrow as dl

    monkeypatch.setenv("DLOAD_CACHE_WAIT", "30")
    for name in "abc":
        _commit(memory_root, name)
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 1_000_000))
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    a = repo.dataset("a")
    frame = a.to_polars()  # another reader holds a's shards
    pipe = dl.mix([repo.dataset("b").pipeline(), repo.dataset("c").pipeline()], [1, 1],
                  seed=0, stop="all")
    assert pipe.check().feasible
    assert sum(1 for _ in pipe) == 800
    assert frame.collect().height == 400
