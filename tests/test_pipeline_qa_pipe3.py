"""QA pass "pipe3" on the combinators: repeat()'s state and length, mix weights whose sum
overflows, unbatch of unequal columns."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pipeline_args import _resume_through_json as _resumed

import dload_arrow as dl


def _alternating(epoch: int) -> Any:
    return iter(range(3) if epoch % 2 == 0 else [])  # even passes give 0, 1, 2; odd none


def test_a_repeat_resumed_after_the_last_item_of_a_pass_counts_that_pass_as_giving() -> None:
    def make() -> Any:
        return dl.from_iterable(_alternating).repeat().take(12)

    full = list(make())
    assert full == [0, 1, 2] * 4
    for k in range(len(full) + 1):
        assert _resumed(make, k) == full  # before: cut after a pass, only [0, 1, 2]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), keep=st.floats(0.05, 0.35))  # ~10 passes at most
def test_a_repeat_of_a_random_subsample_resumes_anywhere_to_the_same_stream(
        seed: int, keep: float) -> None:
    def make() -> Any:
        return dl.zip_with([dl.from_iterable(["x", "y", "z"]), dl.random_stream(seed)]).filter(
            lambda t: t[1] < keep).map(lambda t: t[0]).repeat()

    full = list(make())  # ends after two empty passes in a row
    for k in range(min(len(full), 40) + 1):
        assert _resumed(make, k) == full


def test_repeat_of_a_stream_not_known_empty_is_endless_and_of_an_endless_one_too() -> None:
    filtered = dl.from_iterable([1, 2, 3]).filter(lambda x: x > 1).repeat()
    assert filtered.endless and len(filtered.take(5)) == 5  # ds.filter(f).repeat() in DDP
    assert list(filtered.take(5)) == [2, 3, 2, 3, 2]
    assert dl.from_iterable([1, 2]).repeat().endless
    assert not dl.from_iterable([]).repeat().endless
    endless = dl.random_stream(0).repeat(3)  # its first pass never ends
    assert endless.endless and len(endless.take(10)) == 10  # before: a TypeError
    assert len(list(endless.take(10))) == 10


def test_a_torch_rank_filling_a_repeat_that_ended_says_where_its_length_came_from() -> None:
    pytest.importorskip("torch")
    from dload_arrow.torch import as_iterable_dataset

    def make() -> Any:
        return dl.zip_with([dl.from_iterable(["x", "y", "z"]), dl.random_stream(4)]).filter(
            lambda t: t[1] < 0.3).map(lambda t: t[0]).repeat().take(100)

    real = list(make())
    assert len(real) < 100  # two empty passes in a row ended it
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        got = [list(as_iterable_dataset(make(), rank=r, world_size=2)) for r in (0, 1)]
    assert [len(g) for g in got] == [50, 50] and set(got[0] + got[1]) == set(real)
    # one rank of the job says it, naming where the length came from
    assert [str(w.message) for w in said if "from length= or the pipeline's len()" in
            str(w.message)]


def test_mix_weights_whose_sum_overflows_mix_as_their_ratios() -> None:
    def make(w: float) -> Any:
        return dl.mix([dl.from_iterable(range(10)), dl.from_iterable(range(100, 110))],
                      weights=[w, w], seed=0, stop="all")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning either
        big = make(1e308)
        assert len(big) == 20
        assert list(big) == list(make(1.0))  # before: weights [0, 0], an empty mix


@pytest.mark.parametrize("batch", [{"a": [1, 2, 3], "b": [10, 20]},
                                   {"a": [1, 2], "b": [10, 20, 30]}])
def test_unbatch_refuses_columns_of_different_lengths_whichever_is_shorter(
        batch: dict[str, list[int]]) -> None:
    with pytest.raises(TypeError, match="column 'b' has"):
        list(dl.from_iterable([batch]).unbatch())


def _parse_buggy(x: int) -> int:
    return 100 // x


def _parse_fixed(x: int) -> int:
    return 100 // x if x else 0


def test_a_state_saved_at_a_failing_function_resumes_into_the_fixed_pipeline_when_told() -> None:
    from dload_arrow import ConfigError

    pipe = dl.from_iterable([5, 4, 0, 2, 1]).map(_parse_buggy)
    got: list[int] = []
    with pytest.raises(ZeroDivisionError):
        for y in pipe:
            got.append(y)
    state = json.loads(json.dumps(pipe.state_dict()))
    fixed = dl.from_iterable([5, 4, 0, 2, 1]).map(_parse_fixed)
    with pytest.raises(ConfigError, match=r"strict=False"):
        fixed.load_state_dict(state)  # the fix changed the fingerprint
    fixed.load_state_dict(state, strict=False)
    again = dl.from_iterable([5, 4, 0, 2, 1]).map(_parse_fixed)
    again.load_state_dict(fixed.state_dict())  # saved before an item: the fixed pipeline's
    assert got + list(fixed) == [20, 25, 0, 50, 100] == got + list(again)


def test_the_torch_dataset_resumes_a_fixed_pipeline_with_strict_false() -> None:
    pytest.importorskip("torch")
    from dload_arrow import ConfigError
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset

    ds = as_iterable_dataset(dl.from_iterable([5, 4, 0, 2, 1]).map(_parse_buggy),
                             to_tensors=False)
    got: list[int] = []
    with pytest.raises(ZeroDivisionError):
        for y in ds:
            got.append(y)
    state = ds.state_dict()
    fixed = as_iterable_dataset(dl.from_iterable([5, 4, 0, 2, 1]).map(_parse_fixed),
                                to_tensors=False)
    with pytest.raises(ConfigError, match=r"strict=False"):
        fixed.load_state_dict(state)
    loader = StatefulLoader(fixed, num_workers=2)
    loader.load_state_dict(state, strict=False)
    assert got + list(loader) == [20, 25, 0, 50, 100]
