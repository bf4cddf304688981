"""Pipeline arguments checked where they are given, and scan states that survive JSON."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import dload_arrow as dl
from dload_arrow import Repository


def _resume_through_json(make: Any, at: int) -> list[Any]:
    pipe = make()
    it = iter(pipe)
    head = [next(it) for _ in range(at)]
    state = json.loads(json.dumps(pipe.state_dict()))
    again = make()
    again.load_state_dict(state)
    return head + list(again)


@pytest.mark.parametrize("initial", [(), np.zeros(2), b"", {"t": (1, 2)}, [np.int64(3)]])
def test_a_scan_state_survives_a_json_round_trip(initial: Any) -> None:
    def step(acc: Any, x: int) -> tuple[Any, Any]:
        if isinstance(acc, tuple):
            acc = (*acc, x)[-3:]
        elif isinstance(acc, np.ndarray):
            acc = acc + x
        elif isinstance(acc, bytes):
            acc = (acc + bytes([x]))[-4:]
        elif isinstance(acc, dict):
            acc = {"t": (*acc["t"][1:], x)}
        else:
            acc = [np.int64(acc[0] + x)]
        return acc, repr(acc)

    def make() -> dl.Pipeline:
        return dl.from_iterable(list(range(30))).scan(step, initial)

    whole = list(make())
    assert _resume_through_json(make, 10) == whole


def test_a_pipeline_where_a_list_is_due_is_refused_before_reading() -> None:
    calls: list[int] = []
    a = dl.from_iterable(list(range(5))).map(lambda x: calls.append(x) or x)
    b = dl.from_iterable(list(range(5)))
    for fn in (dl.concat, dl.zip_with):
        with pytest.raises(TypeError, match="list of pipelines"):
            fn(a, b) if fn is dl.zip_with else fn(a)  # type: ignore[operator]
    with pytest.raises(TypeError, match=r"mix\(\[a, b\]"):
        dl.mix(a, [0.5, 0.5])  # type: ignore[arg-type]
    assert calls == []  # nothing was read to find out


@pytest.mark.parametrize("kwargs", [{"high": 0}, {"high": -3}, {"high": 2.5}, {"size": 0},
                                    {"size": -1}, {"size": 10**12}, {"high": 10**30}])
def test_random_stream_arguments_are_checked_when_given(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="random_stream"):
        dl.random_stream(0, **kwargs)


@pytest.mark.parametrize(("kwargs", "match"), [({"window": 1.5, "exact": True}, "int >= 1"),
                                               ({"window": 0, "exact": True}, "int >= 1"),
                                               ({"window": 10}, "exact=True")])
def test_mix_window_is_checked(kwargs: dict[str, Any], match: str) -> None:
    a, b = dl.from_iterable([1, 2]), dl.from_iterable([3, 4])
    with pytest.raises(ValueError, match=match):
        dl.mix([a, b], [0.5, 0.5], **kwargs)


def test_choice_and_select_say_what_their_control_stream_must_yield() -> None:
    a, b = dl.from_iterable(list(range(5))), dl.from_iterable(list(range(5, 10)))
    with pytest.raises(ValueError, match="sequence of 2 weights"):
        list(dl.choice([a, b], dl.from_iterable([0.5] * 5)))
    with pytest.raises(TypeError, match="must yield ints"):
        list(dl.select(dl.from_iterable([0.7, 1.2]), [a, b]))
    assert list(dl.select(dl.from_iterable([1, 0, np.int64(1)]), [a, b])) == [5, 0, 6]


def test_a_shard_of_a_batch_too_big_for_int64_positions_is_refused_at_build(
        repo: Repository) -> None:
    repo.commit("rows", [(f"r{i:03d}", {"i": i}) for i in range(100)], progress=False)
    ds = repo.dataset("rows")
    for make in (lambda: ds.pipeline().batch(2**62).shard(0, 2),
                 lambda: ds.pipeline().batch(2**40).batch(2**40).shard(0, 2),
                 lambda: ds.pipeline().map(lambda r: r).batch(2**32).shard(1, 2, block=2**31)):
        with pytest.raises(dl.ConfigError, match=r"batch\(size=.*count \* block \* size must "
                                                 r"be at most 9,223,372,036,854,775,807"):
            make()
    assert [b["i"].tolist() for b in ds.pipeline().batch(60).shard(1, 2)] == [
        list(range(60, 100))]


def test_an_exact_mix_window_too_big_to_hold_is_refused() -> None:
    pipes = [dl.from_iterable([1]), dl.from_iterable([2])]
    with pytest.raises(dl.ConfigError, match=r"window=4,611,686,018,427,387,904.*at most "
                                             r"100,000,000 slots"):
        dl.mix(pipes, exact=True, window=2**62)
    assert sorted(dl.mix(pipes, exact=True, window=1000, stop="all")) == [1, 2]
