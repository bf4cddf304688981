"""Torch QA round 10: ``length=`` with ``uneven="none"`` over several ranks is the epoch's
count, as with one rank: ``len()``, the items dealt and a checkpoint's position agree."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import dload_arrow as dl  # noqa: E402
from dload_arrow.torch import as_iterable_dataset  # noqa: E402


def _odd(v: int) -> bool:
    return v % 2 == 1


def _pipe() -> dl.Pipeline:
    return dl.from_iterable(list(range(20))).filter(_odd)  # 10 items, length unknown


def _epoch(length: int, world: int) -> list[list[int]]:
    out = []
    for rank in range(world):
        ds = as_iterable_dataset(_pipe(), rank=rank, world_size=world, uneven="none",
                                 length=length, to_tensors=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            items = [int(x) for x in ds]
        assert len(items) == len(ds), (rank, items)
        out.append(items)
    return out


@pytest.mark.parametrize("length", [6, 14])
def test_length_with_uneven_none_over_ranks_deals_the_epoch_one_rank_sees(length: int) -> None:
    one = _epoch(length, 1)[0]
    assert len(one) == length
    two = _epoch(length, 2)
    assert sorted(two[0] + two[1]) == sorted(one)  # the same items as one rank, cut or filled
    assert [len(r) for r in two] == [length // 2, length // 2]


def test_a_checkpoint_under_a_shorter_length_resumes_the_rest_of_the_epoch() -> None:
    whole = _epoch(6, 2)[0]
    ds = as_iterable_dataset(_pipe(), rank=0, world_size=2, uneven="none", length=6,
                             to_tensors=False)
    it = iter(ds)
    first = [int(next(it))]
    state = ds.state_dict()
    assert (state["epoch"], state["position"]) == (0, 2)
    again = as_iterable_dataset(_pipe(), rank=0, world_size=2, uneven="none", length=6,
                                to_tensors=False)
    again.load_state_dict(state)
    assert first + [int(x) for x in again] == whole
    ds2 = as_iterable_dataset(_pipe(), rank=0, world_size=2, uneven="none", length=6,
                              to_tensors=False)
    it3 = iter(ds2)
    for _ in range(len(ds2)):
        next(it3)
    assert ds2.state_dict()["epoch"] == 1  # the last item of the epoch taken: the next one
