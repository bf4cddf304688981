"""Pipeline fixes from QA: cheap skip of dataset sources, repeat of empty passes,
StopIteration in user functions, truthiness, and errors mid-chunk."""

from __future__ import annotations

import pytest

from dload_arrow import Repository


def _commit_nums(repo: Repository, n: int = 1000) -> None:
    repo.commit("nums", [(f"n{i:04d}", {"i": i, "lab": i % 10}) for i in range(n)],
                row_group_size=50, shard_size=200, progress=False)


@pytest.mark.parametrize("order", ["sequential", "windowed", "full"])
def test_skip_on_a_dataset_source_does_not_map_the_skipped_rows(repo: Repository,
                                                                order: str) -> None:
    _commit_nums(repo)
    ds = repo.dataset("nums")
    calls: list[int] = []
    src = {"sequential": ds.pipeline(), "windowed": ds.shuffle(200, seed=3),
           "full": ds.shuffle(full=True, seed=3)}[order]
    every = list(src.map(lambda r: r["i"]))
    p = src.map(lambda r: calls.append(1) or r["i"]).skip(900)
    assert list(p) == every[900:]
    assert len(calls) == 100
