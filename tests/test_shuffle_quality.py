"""Shuffle quality is measured: full shuffle at the uniform references, windowed reported."""

from __future__ import annotations

import numpy as np
import pytest

from dload_arrow import Repository
from dload_arrow.plan.seeds import rng
from dload_arrow.stats import shuffle_quality


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("quality")
    repo = Repository.open(str(root / "root"), cache_dir=str(root / "cache"),
                           cache_budget="unlimited")
    repo.commit("q", [(f"k{i:05d}", {"x": i}) for i in range(6000)], shard_size=6000,
                row_group_size=1500, progress=False)
    return repo.dataset("q")


def test_full_shuffle_sits_at_the_uniform_references(ds) -> None:  # type: ignore[no-untyped-def]
    pipe = ds.shuffle(full=True, seed=1)
    delivered = np.asarray([r["x"] for r in pipe])  # rows are numbered 0..n-1 in storage order
    assert np.array_equal(delivered, pipe.order_array(0))
    q = shuffle_quality(delivered, shard_of=pipe.shard_ids())
    assert len(set(pipe.shard_ids().tolist())) >= 4
    assert q.looks_uniform(z=4.5), str(q)
    assert abs(q.displacement.value - 1 / 3) < 0.02
    assert abs(q.rank_correlation.value) < 0.05


def test_windowed_shuffle_is_reported_and_less_uniform(ds) -> None:  # type: ignore[no-untyped-def]
    pipe = ds.shuffle(500, seed=1)
    q = shuffle_quality(pipe.order_array(0), shard_of=pipe.shard_ids())
    assert q.adjacency is not None
    assert q.adjacency.value > q.adjacency.uniform + 0.3  # rows stay near their shard-mates
    assert not q.looks_uniform()
    text = str(q)
    assert "displacement" in text and "same_shard_adjacent" in text
    assert set(q.to_dict()) == {"displacement", "same_shard_adjacent", "rank_correlation"}


def test_identity_and_reversal_are_far_from_uniform() -> None:
    n = 1000
    ident = shuffle_quality(np.arange(n))
    assert ident.displacement.value == 0 and ident.rank_correlation.value == pytest.approx(1)
    rev = shuffle_quality(np.arange(n)[::-1])
    assert rev.rank_correlation.value == pytest.approx(-1)


def test_random_permutations_are_judged_uniform() -> None:
    ok = sum(shuffle_quality(rng(s).permutation(5000), shard_of=np.arange(5000) // 250)
             .looks_uniform(z=4.5) for s in range(10))
    assert ok == 10


def test_shuffle_quality_rejects_tiny_input() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        shuffle_quality(np.asarray([0]))


@pytest.fixture(scope="module")
def big_groups(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Small rows in row groups larger than the default buffer of 16,384 rows."""
    root = tmp_path_factory.mktemp("big_groups")
    repo = Repository.open(str(root / "root"), cache_dir=str(root / "cache"))
    repo.commit("t", [(f"k{i:06d}", {"x": i}) for i in range(200_000)],
                row_group_size=400_000, progress=False)
    return repo.dataset("t")


def test_default_buffer_spans_several_row_groups_of_small_rows(big_groups) -> None:  # type: ignore[no-untyped-def]
    rows = np.asarray(big_groups.pipeline().unit_rows)
    assert len(rows) >= 6 and np.median(rows) > 16_384, rows  # one group > the old default
    starts = np.concatenate([[0], np.cumsum(rows)])
    first = big_groups.shuffle(seed=3).order_array(0)[:5000]  # rows numbered in storage order
    groups = np.unique(np.searchsorted(starts, first, side="right") - 1)
    assert len(groups) >= 4, groups  # the first window mixes several row groups, not one


def test_a_buffer_smaller_than_a_row_group_warns(big_groups) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(UserWarning, match=r"smaller than the row groups of 't'.*shuffle\(\d+\)"):
        pipe = big_groups.shuffle(1000, seed=3)
    first = pipe.order_array(0)[:5000]
    assert np.ptp(first) < int(np.median(pipe.unit_rows))  # one row group at a time
