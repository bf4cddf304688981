"""The full shuffle's memory check on rows of unequal sizes: it must not trust the first
decoded row group alone (QA c14: small rows first, then 30 KB blobs, ran to 538 MB under a
150 MB limit)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dload_arrow import InfeasiblePlanError, Repository

SMALL, BIG, BLOB = 1000, 150, 20_000


@pytest.fixture
def skewed(repo: Repository) -> Repository:
    """1,000 rows of 10-byte blobs, then 150 of 20 KB (3 MB decoded): the first row group
    holds the small rows and a few large ones, the others a few large rows each."""
    def rows():  # type: ignore[no-untyped-def]
        for i in range(SMALL + BIG):
            blob = b"x" * 10 if i < SMALL else os.urandom(BLOB)
            yield f"k{i:05d}", {"b": blob, "i": i}

    repo.commit("skewed", rows(), row_group_size=100_000, progress=False)
    return repo


def _first_unit(repo: Repository, name: str, seed: int) -> int:
    """The unit (storage order) a full shuffle of ``name`` with ``seed`` decodes first."""
    from dload_arrow.pipeline.full_window import first_need_order

    plan = repo.dataset(name).shuffle(full=True, seed=seed).plan(0)
    first = first_need_order(plan, lambda a, b: np.arange(a, b), plan.num_rows,
                             plan.order.copy())[0]
    return int(plan.order[first])


@pytest.mark.parametrize("items", [True, False], ids=["items", "batches"])
def test_small_rows_decoded_first_do_not_hide_the_large_ones(
        skewed: Repository, monkeypatch: pytest.MonkeyPatch, items: bool) -> None:
    shards = skewed.dataset("skewed").manifest.shards
    assert shards[0].rg_rows[0] > SMALL and max(r for s in shards for r in s.rg_rows[1:]) < 10
    seeds = [s for s in range(8) if _first_unit(skewed, "skewed", s) == 0]
    assert seeds  # the case of the bug: the small row group is decoded first
    # 3 MB of blobs: the first row group alone (100 bytes a row) extrapolates to 0.1 MB
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1.5MB")
    for seed in range(8):
        pipe = skewed.dataset("skewed").shuffle(full=True, seed=seed)
        with pytest.raises(InfeasiblePlanError, match="holds 1,150 decoded rows") as e:
            for _ in (pipe if items else pipe.iter_chunks()):
                pass
        assert "row group" in str(e.value) and "1.5 MB are available" in str(e.value)
    # and with room enough the same epochs run
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "20MB")
    for seed in seeds[:2]:
        pipe = skewed.dataset("skewed").shuffle(full=True, seed=seed)
        assert sorted(r["i"] for r in pipe) == list(range(SMALL + BIG))


def test_uniform_rows_are_refused_on_the_first_row_group(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [(f"k{i:04d}", {"b": os.urandom(2000), "i": i}) for i in range(1000)]
    repo.commit("even", rows, row_group_size=100_000, progress=False)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1MB")  # 2 MB of blobs
    with pytest.raises(InfeasiblePlanError, match="estimated from its first row group"):
        next(iter(repo.dataset("even").shuffle(full=True, seed=1)))


def test_a_compressible_first_row_group_does_not_refuse_what_fits(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    # a row group of zeros (100 to 1 compressed), one of random bytes: scaled by stored
    # bytes alone, the zeros would make 1.2 MB of rows look like tens of MB
    def rows():  # type: ignore[no-untyped-def]
        for i in range(600):
            yield f"k{i:04d}", {"b": bytes(2000) if i < 300 else os.urandom(2000), "i": i}

    repo.commit("zeros", rows(), row_group_size=600_000, progress=False)
    stored = repo.dataset("zeros").manifest.shards[0].rg_bytes
    assert stored[1] > 100 * stored[0]
    seeds = [s for s in range(8) if _first_unit(repo, "zeros", s) == 0]
    assert seeds
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "8MB")
    for seed in seeds:
        pipe = repo.dataset("zeros").shuffle(full=True, seed=seed)
        assert sorted(r["i"] for r in pipe) == list(range(600))


def test_small_rows_count_what_their_arrow_window_really_holds(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tabular rows stay Arrow: the units plus their columns concatenated, and the previous
    # concatenation while the window grows (measured 3.3-4x the decoded bytes, not 2x)
    rows = [(f"k{i:06d}", {"label": i % 10, "s": f"s{i}"}) for i in range(30_000)]
    repo.commit("table", rows, progress=False)
    decoded = sum(c.nbytes for c in repo.dataset("table").pipeline().iter_chunks())
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", str(int(2.5 * decoded)))
    with pytest.raises(InfeasiblePlanError, match="30,000 decoded rows"):
        next(iter(repo.dataset("table").shuffle(full=True, seed=0)))
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", str(5 * decoded))
    assert len(list(repo.dataset("table").shuffle(full=True, seed=0))) == 30_000
