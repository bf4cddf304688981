"""A loaded torch state survives every ``set_epoch`` of its epoch until that epoch starts (a
wrapper forwarding the loader's ``set_epoch`` plus the loop's own call replayed the epoch's
first items), and a pipeline's own loaded state is not silently dropped by the wrapper
(QA pipes 42)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset  # noqa: E402


def _pipe(repo: Repository) -> Any:
    return repo.dataset("a").shuffle(seed=1).batch(10)  # 10 batches an epoch


def _keys(batches: list[Any]) -> list[int]:
    return [int(i) for b in batches for i in b["i"]]


@pytest.fixture
def saved(repo: Repository) -> tuple[dict[str, Any], list[int]]:
    repo.commit("a", ((f"k{i:04d}", {"i": i}) for i in range(100)), progress=False)
    ds = as_iterable_dataset(_pipe(repo))
    it = iter(StatefulLoader(ds))
    seen = [next(it) for _ in range(4)]
    state = ds.state_dict()
    del it
    return state, _keys(seen)


@pytest.mark.parametrize("calls", [1, 2, 3])
def test_set_epoch_of_the_loaded_epoch_keeps_its_position_however_often_called(
        repo: Repository, saved: tuple[dict[str, Any], list[int]], calls: int) -> None:
    state, seen = saved
    ds = as_iterable_dataset(_pipe(repo))
    ds.load_state_dict(state)
    loader = StatefulLoader(ds)
    for k in range(calls):
        (loader if k % 2 else ds).set_epoch(0)
    rest = _keys(list(loader))
    assert len(rest) == 60 and sorted(seen + rest) == list(range(100))
    ds.set_epoch(0)  # after the epoch started: the loaded position is used up
    assert len(_keys(list(loader))) == 100


def test_another_epoch_drops_the_loaded_position(
        repo: Repository, saved: tuple[dict[str, Any], list[int]]) -> None:
    state, _seen = saved
    ds = as_iterable_dataset(_pipe(repo))
    ds.load_state_dict(state)
    ds.set_epoch(1)
    ds.set_epoch(0)
    assert len(_keys(list(StatefulLoader(ds)))) == 100


def test_a_pipeline_with_a_loaded_state_is_refused_by_the_wrapper(repo: Repository) -> None:
    repo.commit("a", ((f"k{i:04d}", {"i": i}) for i in range(100)), progress=False)
    p = _pipe(repo)
    it = iter(p)
    for _ in range(4):
        next(it)
    state = p.state_dict()
    del it
    q = _pipe(repo)
    q.load_state_dict(state)
    with pytest.raises(ConfigError, match=r"state loaded .* cannot carry over"):
        as_iterable_dataset(q)
    peeked = _pipe(repo)
    next(iter(peeked))  # a live iteration (a peek at one batch) is no loaded state
    assert len(_keys(list(StatefulLoader(as_iterable_dataset(peeked))))) == 100


def test_the_wrapper_starts_at_the_epoch_the_pipeline_is_in(repo: Repository) -> None:
    repo.commit("a", ((f"k{i:04d}", {"i": i}) for i in range(100)), progress=False)
    p = _pipe(repo)
    p.set_epoch(3)
    ds = as_iterable_dataset(p)
    assert ds.state_dict()["epoch"] == 3
    reference = _pipe(repo)
    reference.set_epoch(3)
    assert _keys(list(StatefulLoader(ds))) == _keys(list(reference))
    boundary = _pipe(repo)
    boundary.load_state_dict({"epoch": 2, "cursor": None})  # a state saved between epochs
    assert as_iterable_dataset(boundary).state_dict()["epoch"] == 2


def _count_source() -> Any:
    from dload_arrow import from_iterable

    return from_iterable(lambda: iter(range(10)), name="ten")


def test_a_plain_dataloaders_workers_use_up_the_loaded_position() -> None:
    """The workers begin the epoch, not the main process: a second run of the loaded epoch
    resumed mid-epoch again and skipped its first items (review 42)."""
    ds = as_iterable_dataset(_count_source(), to_tensors=False)
    it = iter(ds)
    for _ in range(4):
        next(it)
    state = ds.state_dict()
    del it
    for workers in (0, 2):
        d = as_iterable_dataset(_count_source(), to_tensors=False)
        d.load_state_dict(state)
        src: Any = d if workers == 0 else torch.utils.data.DataLoader(
            d, batch_size=None, num_workers=workers)
        runs = []
        for _ in range(2):
            d.set_epoch(0)
            runs.append(sorted(int(x) for x in src))
        assert runs == [list(range(4, 10)), list(range(10))], workers


def test_a_state_loaded_into_the_pipeline_after_wrapping_is_refused_too() -> None:
    p = _count_source()
    it = iter(p)
    for _ in range(4):
        next(it)
    state = p.state_dict()
    del it
    q = _count_source()
    ds = as_iterable_dataset(q, to_tensors=False)
    q.load_state_dict(state)
    with pytest.raises(ConfigError, match="cannot carry over"):
        list(ds)
    with pytest.raises(ConfigError, match="cannot carry over"):
        list(StatefulLoader(ds))
    mapped = _count_source()
    mapped.load_state_dict(state)  # a pipeline the wrapped one reads
    with pytest.raises(ConfigError, match="cannot carry over"):
        as_iterable_dataset(mapped.map(lambda x: x), to_tensors=False)


def test_a_pipeline_iterated_to_count_its_batches_still_starts_at_epoch_0(
        repo: Repository) -> None:
    repo.commit("a", ((f"k{i:04d}", {"i": i}) for i in range(100)), progress=False)
    p = _pipe(repo)
    assert sum(1 for _ in p) == 10  # counted: the pipeline itself moved on to epoch 1
    ds = as_iterable_dataset(p)
    assert ds.state_dict()["epoch"] == 0
    assert _keys(list(StatefulLoader(ds))) == _keys(list(_pipe(repo)))  # epoch 0's order
