"""Pipeline fixes from QA: cheap skip of dataset sources, repeat of empty passes,
StopIteration in user functions, truthiness, and errors mid-chunk."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest

import dload_arrow as dl
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


def _within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()`` run in a daemon thread; fails (instead of hanging the suite) if it spins."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds}s (loops forever)"
    return out[0]


def test_endless_repeat_of_a_stream_filtered_to_nothing_ends(repo: Repository) -> None:
    p = dl.from_iterable([1, 2, 3]).filter(lambda x: x > 10).repeat()
    assert _within(20, lambda: list(itertools.islice(p, 5))) == []
    _commit_nums(repo, 300)
    q = repo.dataset("nums").shuffle(10).filter(lambda r: r["lab"] == 99).repeat()
    assert _within(60, lambda: list(itertools.islice(q, 5))) == []


def test_repeat_times_goes_on_after_an_empty_pass() -> None:
    p = dl.from_iterable(lambda e: [] if e == 1 else [e])
    assert list(p.repeat(3)) == [0, 2]
    assert list(p.repeat(4)) == [0, 2, 3]
    assert list(itertools.islice(p.repeat(), 3)) == [0, 2, 3]
    assert list(p.filter(lambda x: x != 1).repeat(3)) == [0, 2]


def _stop_at_3(x: Any) -> Any:
    if x == 3:
        raise StopIteration
    return x


@pytest.mark.parametrize("make", [
    lambda p: p.map(_stop_at_3),
    lambda p: p.filter(_stop_at_3),
    lambda p: p.flat_map(lambda x: [_stop_at_3(x)]),
    lambda p: p.scan(lambda acc, x: (acc, _stop_at_3(x)), 0),
    lambda p: p.map(lambda x: {"x": x}).map_batches(lambda b: _stop_at_3(3)),
    lambda p: dl.zip_with([p, p], lambda a, b: _stop_at_3(a)),
    lambda p: p.batch(2, collate=lambda c: _stop_at_3(c[-1])),
    lambda p: dl.mix([p.map(_stop_at_3), dl.from_iterable([7] * 10)], stop="all"),
], ids=["map", "filter", "flat_map", "scan", "map_batches", "zip_with", "collate", "mix"])
def test_stop_iteration_in_a_user_function_is_an_error_not_the_end(make: Any) -> None:
    with pytest.raises(RuntimeError, match="raised StopIteration") as err:
        list(make(dl.from_iterable(list(range(10)))))
    assert isinstance(err.value.__cause__, StopIteration)


def test_stop_iteration_in_a_dataset_map_is_an_error(repo: Repository) -> None:
    _commit_nums(repo, 100)
    p = repo.dataset("nums").map(lambda r: _stop_at_3(r["i"]))
    with pytest.raises(RuntimeError, match=r"map\(.*\) raised StopIteration"):
        list(p)


def test_a_pipeline_is_always_true(repo: Repository) -> None:
    filtered = dl.from_iterable([1, 2, 3]).filter(lambda x: x > 10)
    empty = dl.from_iterable([])
    endless = dl.from_iterable([1]).repeat()
    for p in (filtered, empty, endless):
        assert bool(p) is True
        assert (p or None) is p
    _commit_nums(repo, 10)
    view = repo.dataset("nums").where("i > 100")
    assert bool(view.pipeline().filter(lambda r: True))


def _fails_at_5(flag: Any) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        if x == 5 and not flag.exists():
            raise ValueError(f"bad sample {x}")
        return x
    return f


@pytest.mark.parametrize("op", ["map", "filter", "flat_map", "dataset map", "dataset filter"])
def test_an_error_in_a_user_function_keeps_the_items_before_it_and_the_state_at_it(
        repo: Repository, tmp_path: Any, op: str) -> None:
    flag = tmp_path / "fixed"  # f is fixed when this file exists (same function, same fp)
    f = _fails_at_5(flag)
    _commit_nums(repo, 600)
    ds = repo.dataset("nums")
    make = {
        "map": lambda: dl.from_iterable(list(range(1000))).map(f),
        "filter": lambda: dl.from_iterable(list(range(1000))).filter(lambda x: f(x) % 2 == 0),
        "flat_map": lambda: dl.from_iterable(list(range(1000))).flat_map(lambda x: [f(x)] * 2),
        "dataset map": lambda: ds.shuffle(300, seed=1).map(lambda r: f(r["i"])),
        "dataset filter": lambda: ds.pipeline().filter(lambda r: f(r["i"]) % 3 == 0),
    }[op]
    flag.touch()
    every = list(make())
    flag.unlink()
    p = make()
    it = iter(p)
    got: list[Any] = []
    with pytest.raises(ValueError, match="bad sample 5"):
        for x in it:
            got.append(x)
    before_5 = {"map": 5, "filter": 3, "flat_map": 10, "dataset filter": 2}.get(op)
    before_5 = every.index(5) if before_5 is None else before_5
    assert got == every[:before_5]  # the items before the failing one were delivered
    state = p.state_dict()
    with pytest.raises(ValueError, match="bad sample 5"):  # the state points at the item
        q = make()
        q.load_state_dict(state)
        list(q)
    with pytest.raises(ValueError, match="bad sample 5"):  # so does the same iterator
        next(it)
    flag.touch()  # the user fixes f: the rest of the epoch, nothing lost or repeated
    q = make()
    q.load_state_dict(state)
    assert got + list(q) == every
    assert got + list(it) == every


@pytest.mark.parametrize("where", ["map", "collate"])
def test_a_batch_that_fails_is_made_again_on_resume(tmp_path: Any, where: str) -> None:
    flag = tmp_path / "fixed"
    f = _fails_at_5(flag)

    def collate(items: list[Any]) -> Any:
        return [f(x) for x in items]

    def make() -> Any:
        src = dl.from_iterable(list(range(100)))
        return src.map(f).batch(4) if where == "map" else src.batch(4, collate=collate)

    every = [list(range(i, i + 4)) for i in range(0, 100, 4)]
    p = make()
    it = iter(p)
    got = [list(next(it))]
    with pytest.raises(ValueError, match="bad sample 5"):
        next(it)
    state = p.state_dict()
    flag.touch()
    q = make()
    q.load_state_dict(state)
    assert got + [list(b) for b in q] == every
    assert got + [list(b) for b in it] == every


def test_from_iterable_of_a_dataframe_is_refused_naming_the_row_form() -> None:
    import pandas as pd
    import polars as pl

    for df in (pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]}), pl.DataFrame({"a": [1, 2, 3]})):
        with pytest.raises(dl.ConfigError, match=r"its column names .*to_dict\('records'\)"):
            dl.from_iterable(df)
    rows = pd.DataFrame({"a": [1, 2], "b": [3, 4]}).to_dict("records")
    assert list(dl.from_iterable(rows)) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]


def test_seeds_beyond_128_bits_give_their_own_orders() -> None:
    def order(seed: int) -> list[int]:
        return list(dl.from_iterable(list(range(50))).shuffle(50, seed=seed))

    assert order(2**128) != order(0) and order(-1) != order(2**128 - 1)
    assert order(2**200) == order(2**200) and order(-(2**130)) != order(2**130)
    assert order(7) == order(7) != order(8)
