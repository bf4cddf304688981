"""Torch QA pass 3: checkpoints through to_device, refused loader layouts, lazy epochs, ranks
kept equal under a wrong length, per-sample dtypes, and argument checks."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_torch_loader import _keys  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create:UserWarning", "ignore:'set_vital' is deprecated"
)
N = 103


@pytest.fixture
def d103(repo: Repository) -> Any:
    rows = [(f"k{i:05d}", {"label": i % 7, "f64": i / 10, "i8": np.int8(i % 100),
                          "vl": list(range(i % 4)), "maybe": None if i % 5 == 0 else float(i)})
            for i in range(N)]
    repo.commit("d103", rows, row_group_size="1KB", progress=False)
    return repo.dataset("d103")


@pytest.mark.parametrize("workers", [0, 2])
def test_the_loaders_state_inside_a_to_device_loop_is_what_the_loop_received(
        d103: Any, workers: int) -> None:
    pipe = d103.shuffle(64, seed=9).batch(4)
    loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=workers)
    seen: list[str] = []
    for step, batch in enumerate(to_device(loader, "cpu", prefetch=3)):
        seen.extend(batch["__key__"])
        if step == 4:
            time.sleep(0.3)  # a training step: the copy thread fills its queue meanwhile
            saved = loader.state_dict()
            assert loader.dataset.state_dict() == saved
            break
    assert saved["position"] == 5
    resumed = as_iterable_dataset(pipe)
    resumed.load_state_dict(saved)
    rest = _keys(StatefulLoader(resumed, num_workers=1))
    assert Counter(seen + rest) == Counter(f"k{i:05d}" for i in range(N))
    # iterating the loader without to_device counts for itself again
    ds = as_iterable_dataset(pipe)
    plain = StatefulLoader(ds, num_workers=0)
    list(to_device(plain, "cpu"))
    it = iter(plain)
    next(it)
    assert ds.state_dict()["position"] == 1


def test_in_order_false_is_refused(d103: Any) -> None:
    with pytest.raises(ConfigError, match="in_order=False"):
        StatefulLoader(as_iterable_dataset(d103.pipeline()), num_workers=2, in_order=False)


def test_a_plain_dataloader_with_workers_has_no_state_to_give(d103: Any) -> None:
    ds = as_iterable_dataset(d103.pipeline())
    assert ds.state_dict()["position"] == 0  # nothing iterated yet: the plan is exact
    it = iter(DataLoader(ds, batch_size=None, num_workers=2))
    next(it)
    with pytest.raises(ConfigError, match="StatefulLoader"):
        ds.state_dict()
    del it
    ds.set_epoch(1)  # an epoch boundary the user set: exact again
    assert ds.state_dict()["epoch"] == 1


def test_stateful_dataloader_restored_at_an_epochs_end_delivers_the_next_epoch(
        d103: Any) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader")
    pipe = d103.shuffle(64, seed=8)

    def epoch(e: int) -> list[str]:
        view = pipe.skip(0)
        view.set_epoch(e)
        return _keys(view)

    loader = sdl.StatefulDataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=0)
    assert _keys(loader) == epoch(0)
    again = sdl.StatefulDataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=0)
    again.load_state_dict(loader.state_dict())
    assert _keys(again) == epoch(1)


@pytest.mark.parametrize("workers", [0, 2])
def test_ranks_stay_equal_when_length_overstates_the_epoch(d103: Any, workers: int) -> None:
    pipe = d103.shuffle(64, seed=1).filter(lambda s: s["label"] % 2 == 0)
    real = len(_keys(pipe))
    got = []
    # the warning comes from the process that reads: this one without workers
    with pytest.warns(UserWarning, match="fewer than its length") if workers == 0 \
            else contextlib.nullcontext():
        for rank in range(3):
            ds = as_iterable_dataset(pipe, rank=rank, world_size=3, length=real + 8)
            got.append((len(ds), len(_keys(StatefulLoader(ds, num_workers=workers)))))
    assert len(set(got)) == 1 and got[0][0] == got[0][1] == -(-(real + 8) // 3)


def test_samples_take_their_columns_dtypes(d103: Any) -> None:
    items = list(as_iterable_dataset(d103.pipeline()))
    first, second = items[0], items[1]
    assert first["f64"].dtype == torch.float64 and second["f64"].item() == 0.1
    assert first["i8"].dtype == torch.int8
    # a list column is a tensor in every row, an empty one too
    assert all(isinstance(s["vl"], torch.Tensor) and s["vl"].dtype == torch.int64
               for s in items)
    assert first["vl"].shape == (0,) and first["maybe"] is None
    assert second["maybe"].dtype == torch.float64


def test_rank_arguments_and_environment_are_checked(d103: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in ({"rank": "1", "world_size": 2}, {"rank": 1.0, "world_size": 2},
                {"rank": 0, "world_size": 2.5}):
        with pytest.raises(ConfigError, match="need an int"):
            as_iterable_dataset(d103.pipeline(), **bad)
    ds = as_iterable_dataset(d103.pipeline(), rank=np.int64(1), world_size=np.int64(2),
                             length=np.int64(N))
    assert len(ds) == 52
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(ConfigError, match="RANK is not"):
        as_iterable_dataset(d103.pipeline())
    with pytest.raises(ConfigError, match=r"prefetch=2\.5"):
        to_device([], "cpu", prefetch=2.5)  # type: ignore[arg-type]


def test_a_half_float_column_commits(repo: Repository) -> None:
    repo.commit("h", [(f"k{i}", {"h": np.float16(i / 2)}) for i in range(10)], progress=False)
    assert [s["h"] for s in repo.dataset("h").samples()][:3] == [0.0, 0.5, 1.0]


def test_to_device_works_with_spawned_workers_and_after_a_plain_loaders_epoch(
        d103: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = d103.pipeline().batch(20)
    ds = as_iterable_dataset(pipe, to_tensors=False)
    assert len(list(DataLoader(ds, batch_size=None, num_workers=2))) == 6  # plain, workers
    loader = StatefulLoader(ds, num_workers=1, multiprocessing_context="spawn")
    got = list(to_device(loader, "cpu"))  # the dataset, linked to to_device, is pickled
    assert sum(len(b["__key__"]) for b in got) == N
    assert loader.state_dict()["epoch"] == 2 and loader.state_dict()["position"] == 0
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.delenv("RANK", raising=False)
    assert as_iterable_dataset(pipe, world_size=1).world_size == 1  # explicit: rank 0 of 1


def _epoch_keys(pipe: Any, e: int) -> list[str]:
    view = pipe.skip(0)
    view.set_epoch(e)
    return _keys(view)


@pytest.mark.parametrize("persistent", [False, True])
def test_after_a_restore_inside_the_workers_the_next_epoch_follows(
        d103: Any, persistent: bool) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader")
    pipe = d103.shuffle(64, seed=3)

    def loader() -> Any:
        return sdl.StatefulDataLoader(as_iterable_dataset(pipe), batch_size=None,
                                      num_workers=2, persistent_workers=persistent)

    first = loader()
    assert _keys(first) == _epoch_keys(pipe, 0)  # epoch 0, whole (the workers keep order)
    it = iter(first)
    head = [next(it)["__key__"] for _ in range(40)]  # epoch 1, in part
    state = first.state_dict()
    del it
    again = loader()
    again.load_state_dict(state)  # each worker gets its own state back
    rest = _keys(again)
    assert head + rest == _epoch_keys(pipe, 1)
    assert _keys(again) == _epoch_keys(pipe, 2)  # not epoch 1 again
    assert _keys(again) == _epoch_keys(pipe, 3)


def test_a_plain_loader_rebuilt_with_more_workers_keeps_one_epoch_per_iteration(
        d103: Any) -> None:
    pipe = d103.shuffle(64, seed=4)
    ds = as_iterable_dataset(pipe, to_tensors=False)
    e0 = [s["__key__"] for s in DataLoader(ds, batch_size=None, num_workers=1)]
    e1 = [s["__key__"] for s in DataLoader(ds, batch_size=None, num_workers=2)]
    assert Counter(e0) == Counter(e1) == Counter(f"k{i:05d}" for i in range(N))
    assert e0 == _epoch_keys(pipe, 0) and e1 == _epoch_keys(pipe, 1)
    e2 = [s["__key__"] for s in DataLoader(ds, batch_size=None, num_workers=0)]
    assert e2 == _epoch_keys(pipe, 2)  # the main process continues after the workers


def test_length_is_the_epochs_count_or_refused_when_it_contradicts_the_pipeline(
        d103: Any) -> None:
    with pytest.raises(ConfigError, match=r"length=5 .* has 103 items"):
        len(as_iterable_dataset(d103.pipeline(), length=5))
    with pytest.raises(ConfigError, match="take"):
        list(as_iterable_dataset(d103.pipeline(), length=500))
    odd = d103.pipeline().filter(lambda s: s["label"] % 2 == 1)  # 44 items, unknown to len()
    ds = as_iterable_dataset(odd, length=40, to_tensors=False)
    assert len(ds) == len(list(ds)) == 40  # one rank too: iteration keeps to length=


def _fill_run(pipe: Any, rank: int, workers: int, stop: int | None = None,
              state: Any = None) -> tuple[list[int], Any]:
    ds = as_iterable_dataset(pipe, rank=rank, world_size=2, length=40, to_tensors=False)
    loader = StatefulLoader(ds, num_workers=workers)
    if state is not None:
        loader.load_state_dict(state)
    got: list[int] = []
    for x in loader:
        got.append(int(x))
        if stop is not None and len(got) == stop:
            return got, loader.state_dict()
    return got, None


@pytest.mark.filterwarnings("ignore:epoch 0 has 30 item")
def test_the_fill_of_an_epoch_shorter_than_length_is_dealt_by_position() -> None:
    """QA: the items repeated when an epoch is shorter than length= were drawn per consumer
    (0, 0, 1, 1, ... with two workers; the same items on every rank), and a resume inside
    them drew another set. They are now the items at (position - true length) % true length,
    like uneven="pad"'s padding: the same whatever the workers, and across ranks each once."""
    import dload_arrow as dl

    pipe = dl.from_iterable(list(range(60))).filter(lambda v: v % 2 == 0)  # 30 items
    runs = {w: [_fill_run(pipe, r, w)[0] for r in (0, 1)] for w in (0, 1, 3)}
    assert runs[0] == runs[1] == runs[3]
    ranks = runs[0]
    assert [len(r) for r in ranks] == [20, 20]
    assert ranks[0][15:] == [0, 4, 8, 12, 16] and ranks[1][15:] == [2, 6, 10, 14, 18]
    assert sorted(ranks[0][15:] + ranks[1][15:]) == list(range(0, 20, 2))
    for w in (0, 2):  # checkpoint inside the fill, then resume
        for r in (0, 1):
            head, state = _fill_run(pipe, r, w, stop=17)
            assert head + _fill_run(pipe, r, w, state=state)[0] == ranks[r]
