"""Window sizing and read plans: properties of the pure math, and refusal before any I/O."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dload_arrow import InfeasiblePlanError, Repository
from dload_arrow.plan.window import (
    DEFAULT_PREFETCH,
    choose_window,
    full_resident_bytes,
    window_resident_bytes,
)
from dload_arrow.read.planner import check_plans, plan_read
from dload_arrow.read.reader import all_units, iter_units

sizes_st = st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=40)


@given(sizes_st, st.integers(min_value=0, max_value=10**11), st.integers(1, 16))
def test_a_budget_sized_window_fits_the_budget_or_is_one(sizes, budget, consumers) -> None:
    w = choose_window(sizes, budget, consumers=consumers)
    assert 1 <= w <= min(len(sizes), DEFAULT_PREFETCH + 1)
    if w > 1:
        assert consumers * window_resident_bytes(sizes, w) <= budget
    if w < min(len(sizes), DEFAULT_PREFETCH + 1):
        assert consumers * window_resident_bytes(sizes, w + 1) > budget


@given(sizes_st, st.integers(0, 10**11), st.integers(0, 10**11), st.integers(1, 8))
def test_a_larger_budget_never_gives_a_smaller_window(sizes, a, b, consumers) -> None:
    lo, hi = sorted((a, b))
    assert choose_window(sizes, lo, consumers=consumers) <= choose_window(
        sizes, hi, consumers=consumers)


@given(sizes_st, st.integers(0, 100))
def test_an_explicit_prefetch_is_honoured_up_to_the_shard_count(sizes, prefetch) -> None:
    assert choose_window(sizes, 0, prefetch=prefetch) == min(prefetch + 1, len(sizes))


@given(sizes_st, st.integers(0, 45))
def test_window_resident_bytes_bounds_every_window(sizes, w) -> None:
    bound = window_resident_bytes(sizes, w)
    for start in range(len(sizes)):
        assert sum(sizes[start:start + w]) <= bound
    assert window_resident_bytes(sizes, len(sizes)) == full_resident_bytes(sizes)
    assert bound <= full_resident_bytes(sizes)


def test_choose_window_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        choose_window([1], 10, consumers=0)
    with pytest.raises(ValueError):
        choose_window([1], 10, prefetch=-1)
    assert choose_window([], 10) == 0


def _cached_files(cache_dir: str) -> list[str]:
    return [f for _, _, fs in os.walk(cache_dir) for f in fs if ".parquet" in f]


def _repo(root: str, cache_dir: str, budget: str) -> Repository:
    return Repository.open(root, cache_dir=cache_dir, cache_budget=budget)


def _commit(repo: Repository, n: int = 600) -> None:
    samples = [(f"k{i:05d}", {"x": i, "blob": os.urandom(40)}) for i in range(n)]
    repo.commit("d", samples, shard_size=3000, row_group_size=800, progress=False)


@settings(max_examples=30, deadline=None)
@given(budget_shards=st.floats(0.2, 30.0), consumers=st.integers(1, 6),
       prefetch=st.one_of(st.none(), st.integers(0, 6)), full=st.booleans())
def test_plan_feasibility_matches_the_resident_set(tmp_path_factory, budget_shards, consumers,
                                                   prefetch, full) -> None:
    root = f"memory://plan-{tmp_path_factory.mktemp('p').name}"
    cache_dir = str(tmp_path_factory.mktemp("c"))
    writer = _repo(root, cache_dir, "unlimited")
    if not writer.datasets():
        _commit(writer, 300)
    m = writer.manifest("d")
    biggest = max(s.bytes for s in m.shards)
    budget = int(budget_shards * biggest)
    plan = plan_read(_repo(root, cache_dir, str(budget)).read_context, m, all_units(m),
                     full_shuffle=full, consumers=consumers, prefetch=prefetch)
    expected = m.num_bytes if full else min(m.num_bytes, consumers * window_resident_bytes(
        [s.bytes for s in m.shards], plan.window_shards))  # consumers share the cache
    assert plan.resident_bytes == expected
    assert plan.budget_bytes == budget
    assert plan.feasible == (expected <= budget and expected <= plan.free_disk_bytes)
    if not plan.feasible:
        with pytest.raises(InfeasiblePlanError) as err:
            plan.check()
        text = str(err.value)
        assert "raise the cache budget" in text
        assert ("windowed shuffle" in text) if full else True


def test_a_full_shuffle_bigger_than_the_budget_is_refused_before_any_request(
    s3_root: str, cache_dir: str, s3_server
) -> None:
    _commit(_repo(s3_root, cache_dir + "-w", "unlimited"))
    repo = _repo(s3_root, cache_dir, "5KB")
    ds = repo.dataset("d")  # reads the ref and the manifest
    s3_server.clear()
    plan = ds.plan(full_shuffle=True)
    assert not plan.feasible and plan.resident_bytes == ds.num_bytes
    with pytest.raises(InfeasiblePlanError) as err:
        iter_units(repo.read_context, ds.manifest, ds.units_all(), full_shuffle=True)
    msg = str(err.value)
    assert "5.0 KB" in msg and "windowed shuffle" in msg and "raise the cache budget" in msg
    assert len(s3_server.requests) == 0
    assert _cached_files(cache_dir) == []


def test_an_explicit_prefetch_that_does_not_fit_says_lower_prefetch(memory_root: str,
                                                                    cache_dir: str) -> None:
    _commit(_repo(memory_root, cache_dir, "unlimited"))
    repo = _repo(memory_root, cache_dir, "8KB")
    with pytest.raises(InfeasiblePlanError, match="lower prefetch"):
        repo.dataset("d").batches(prefetch=5)
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600  # window from budget


def test_check_plans_sums_sources_sharing_a_machine(memory_root: str, cache_dir: str) -> None:
    _commit(_repo(memory_root, cache_dir, "unlimited"))
    m = _repo(memory_root, cache_dir, "unlimited").manifest("d")
    one = max(s.bytes for s in m.shards)
    repo = _repo(memory_root, cache_dir, str(3 * one))
    ctx = repo.read_context
    plans = [plan_read(ctx, m, all_units(m), prefetch=0, consumers=2) for _ in range(2)]
    assert all(p.feasible for p in plans)
    report = check_plans(ctx, plans)
    assert report.resident_bytes == 4 * one and not report.feasible
    text = str(report)
    assert "total" in text and "d@" in text and "INFEASIBLE" in text
    with pytest.raises(InfeasiblePlanError, match="together they need"):
        report.check()
    assert check_plans(ctx, plans[:1]).check().feasible


def test_sources_read_one_at_a_time_are_not_blamed_together(memory_root: str,
                                                            cache_dir: str) -> None:
    """A concat reads one source at a time: when one of them is too big alone, the report
    names it and neither says "together" nor suggests reading fewer sources at once."""
    _commit(_repo(memory_root, cache_dir, "unlimited"))
    m = _repo(memory_root, cache_dir, "unlimited").manifest("d")
    one = max(s.bytes for s in m.shards)
    ctx = _repo(memory_root, cache_dir, str(3 * one)).read_context
    fits = plan_read(ctx, m, all_units(m), prefetch=0)
    big = plan_read(ctx, m, all_units(m), full_shuffle=True)
    assert fits.feasible and not big.feasible
    for plans in ([fits, big], [big, fits]):
        msg = check_plans(ctx, plans, at_once=1).message
        assert msg.startswith("a source does not fit this machine: d: "), msg
        assert "together" not in msg and "fewer sources" not in msg
    both = check_plans(ctx, [fits, big])  # read at once: still one source's own reason
    assert "together" not in both.message and "fewer sources" not in both.message
    pair = check_plans(ctx, [fits] * 4)
    assert pair.message.startswith("the sources do not fit this machine together: ")
    assert "read fewer sources at once" in pair.message


def test_a_local_root_is_read_in_place_and_needs_no_cache(local_root: str,
                                                          cache_dir: str) -> None:
    repo = _repo(local_root, cache_dir, "1KB")
    _commit(repo)
    plan = repo.dataset("d").plan(full_shuffle=True)
    assert plan.in_place and plan.feasible and plan.resident_bytes == 0
    assert sum(b.num_rows for b in repo.dataset("d").batches()) == 600
    assert _cached_files(cache_dir) == []


def test_a_budget_too_small_for_whole_version_reads_names_what_needs_it(
        memory_root: str, cache_dir: str) -> None:
    from dload_arrow import InfeasiblePlanError

    big = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    big.commit("d", [(f"k{i:05d}", {"b": os.urandom(200), "x": i}) for i in range(4000)],
               shard_size=200_000, row_group_size=50_000, progress=False)
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="300KB")
    ds = repo.dataset("d")
    for run, purpose, alternative in [
        (lambda: repo.pull("d", progress=False), "for pull", "read it without pulling"),
        (lambda: ds.where("x > 5").to_polars(), "for to_polars", "to_arrow(), to_pandas()"),
        (lambda: repo.sql("select count(*) from samples('d')"), "for sql", "ds.where(...)"),
    ]:
        with pytest.raises(InfeasiblePlanError) as err:
            run()
        msg = str(err.value)
        assert f"every shard at once, {purpose}" in msg and alternative in msg
        assert "windowed shuffle" not in msg and "full shuffle" not in msg
    assert sum(b.num_rows for b in ds.where("x > 5").batches()) == 3994  # streams within it
