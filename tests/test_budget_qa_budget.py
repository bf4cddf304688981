"""QA pass "budget": the size a refusal asks for is rounded up, so typed back it suffices,
and the fix names the CLI flag too."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dload_arrow import InfeasiblePlanError, Repository
from dload_arrow.sizes import format_bytes_up, parse_size


@pytest.mark.parametrize("n", [0, 1, 999, 1000, 1001, 1_001_818, 999_950, 30_040_000,
                               999_999_999, 12_345_678_901, 1_100_000_001, 100_000_000_000_001])
def test_a_size_rounded_up_is_never_less_than_the_size(n: int) -> None:
    text = format_bytes_up(n)
    assert parse_size(text.replace(" ", "")) >= n


def test_the_budget_a_refusal_asks_for_is_enough(tmp_path: Path) -> None:
    rng = random.Random(0)
    root = f"memory://budget-{tmp_path.name}"  # (a local root is read in place, uncached)
    Repository.open(root).commit(
        "big", [(f"k{i}", {"b": rng.randbytes(20_000)}) for i in range(60)],
        shard_size=1_001_000, progress=False)
    repo = Repository.open(root, cache_dir=tmp_path / "c", cache_budget="1MB")
    shard = max(s.bytes for s in repo.manifest("big", "latest").shards)
    assert 1_000_000 < shard < 1_050_000  # a shard just over 1.0 MB
    with pytest.raises(InfeasiblePlanError, match="--cache-budget") as e:
        list(repo.dataset("big").samples())
    asked = str(e.value).split("at least ")[1].split(" (")[0]
    assert asked != "1.0 MB"  # before: rounded down, and refused again when typed back
    again = Repository.open(root, cache_dir=tmp_path / "c2", cache_budget=asked)
    assert sum(1 for _ in again.dataset("big").samples()) == 60


def test_a_lazyframe_of_a_kept_where_view_keeps_its_files_and_a_dropped_one_frees_them(
        tmp_path: Path) -> None:
    pytest.importorskip("polars")
    rng = random.Random(1)
    root = f"memory://held-{tmp_path.name}"
    Repository.open(root).commit(
        "d", [(f"k{i:04d}", {"i": i, "b": rng.randbytes(1000)}) for i in range(1000)],
        shard_size=100_000, progress=False)
    repo = Repository.open(root, cache_dir=tmp_path / "c", cache_budget="600KB")
    ds = repo.dataset("d")
    assert len(ds.manifest.shards) >= 5  # of about 200 KB: 3 fit the budget
    for _ in range(3):  # views dropped at once hold nothing after: no pile on ds
        ds.where("i < 150").to_polars()
    view = ds.where("i < 150")
    lf = view.to_polars()  # the documented pattern: keep the view
    assert sum(1 for _ in ds.samples()) == 1000  # streams every shard through the budget
    assert lf.collect().height == 150  # its files were held, not evicted
