"""QA pass 8 on the torch adapter: resuming a torchdata StatefulDataLoader saved before its
workers' first snapshot, and to_device holding no reference cycle."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from dload_arrow import ConfigError, Repository
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device


def _pipe(root: Path) -> object:
    repo = Repository.open(root)
    if "d" not in repo.datasets():
        repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(60)], row_group_size=200,
                    progress=False)
    return repo.dataset("d").shuffle(seed=3)


@pytest.mark.parametrize("stop", [1, 4])
def test_a_stateful_dataloader_saved_before_its_first_snapshot_resumes_with_other_workers(
        tmp_path: Path, stop: int) -> None:
    stateful = pytest.importorskip("torchdata.stateful_dataloader")
    full = [int(x["x"]) for x in as_iterable_dataset(_pipe(tmp_path))]
    sdl = stateful.StatefulDataLoader(as_iterable_dataset(_pipe(tmp_path)), num_workers=2,
                                      batch_size=None, snapshot_every_n_steps=7)
    got = []
    for x in sdl:
        got.append(int(x["x"]))
        if len(got) == stop:
            break
    state = sdl.state_dict()
    assert state["_steps_since_snapshot"] == stop  # before the first snapshot
    again = as_iterable_dataset(_pipe(tmp_path))
    again.load_state_dict(state)  # another num_workers: through the dataset (TUTORIAL)
    rest = [int(x["x"]) for x in StatefulLoader(again, num_workers=3)]
    assert got + rest == full


def test_to_device_keeps_no_cycle_that_holds_persistent_workers(tmp_path: Path) -> None:
    ds = as_iterable_dataset(_pipe(tmp_path))
    gc.collect()
    gc.disable()
    try:
        loader = StatefulLoader(ds, num_workers=2, persistent_workers=True)
        dev = to_device(loader, "cpu")
        assert len([x for x in dev]) == 60
        held = weakref.ref(loader)
        del loader, dev
        assert held() is None  # freed now, workers with it, not at some later gc
    finally:
        gc.enable()


def test_a_fixed_size_list_without_a_recorded_shape_batches_into_a_tensor(
        tmp_path: Path) -> None:
    import pyarrow as pa
    import torch

    repo = Repository.open(tmp_path / "root")
    values = pa.array([[float(4 * i + j) for j in range(4)] for i in range(10)],
                      pa.list_(pa.float32(), 4))
    repo.commit("t", pa.table({"__key__": [f"k{i}" for i in range(10)], "fsl": values}),
                progress=False)
    assert repo.dataset("t").schema.field("fsl").metadata is None  # no dload.shape
    batches = list(as_iterable_dataset(repo.dataset("t").pipeline().batch(4)))
    first = batches[0]["fsl"]
    assert isinstance(first, torch.Tensor) and first.shape == (4, 4)
    assert first.dtype == torch.float32 and first[1].tolist() == [4.0, 5.0, 6.0, 7.0]
    sample = next(iter(as_iterable_dataset(repo.dataset("t").pipeline())))["fsl"]
    assert isinstance(sample, torch.Tensor) and sample.shape == (4,)  # as per sample


def test_the_to_device_wrappers_state_over_a_stateful_dataloader_counts_what_the_loop_got(
        tmp_path: Path) -> None:
    import time

    stateful = pytest.importorskip("torchdata.stateful_dataloader")
    full = [int(x["x"]) for x in as_iterable_dataset(_pipe(tmp_path))]
    sdl = stateful.StatefulDataLoader(as_iterable_dataset(_pipe(tmp_path)), num_workers=2,
                                      batch_size=None)
    batches = to_device(sdl, "cpu", prefetch=4)
    got = []
    for x in batches:
        got.append(int(x["x"]))
        time.sleep(0.02)  # a slow step: the wrapper's queue fills ahead of the loop
        if len(got) == 10:
            break
    state = batches.state_dict()
    again = as_iterable_dataset(_pipe(tmp_path))
    again.load_state_dict(state)
    assert again.state_dict()["epoch"] == 0  # as the TUTORIAL's resume loop reads it
    rest = [int(x["x"]) for x in StatefulLoader(again, num_workers=1)]
    assert got + rest == full


@pytest.mark.parametrize("workers", [0, 2])
def test_after_an_inline_to_device_loop_the_dataset_counts_what_the_loop_got(
        tmp_path: Path, workers: int) -> None:
    import time

    full = [int(x["x"]) for x in as_iterable_dataset(_pipe(tmp_path))]
    ds = as_iterable_dataset(_pipe(tmp_path))
    loader = StatefulLoader(ds, num_workers=workers)
    got = []
    for x in to_device(loader, "cpu", prefetch=4):  # the wrapper lives only in this loop
        got.append(int(x["x"]))
        time.sleep(0.02)  # the queue fills ahead of the loop
        if len(got) == 5:
            break
    gc.collect()
    state = loader.state_dict()
    assert state["position"] == 5 and ds.state_dict()["position"] == 5
    again = as_iterable_dataset(_pipe(tmp_path))
    again.load_state_dict(state)
    assert got + [int(x["x"]) for x in StatefulLoader(again, num_workers=1)] == full


def test_a_fixed_size_list_with_a_missing_number_batches_as_lists_unchanged(
        tmp_path: Path) -> None:
    import pyarrow as pa

    repo = Repository.open(tmp_path / "root")
    values = pa.array([[2**53 + 1, None], [7, 8]], pa.list_(pa.int64(), 2))
    repo.commit("t", pa.table({"__key__": ["a", "b"], "v": values}), progress=False)
    batch = next(iter(repo.dataset("t").pipeline().batch(2)))
    assert batch["v"] == [[2**53 + 1, None], [7, 8]]  # no float64, no NaN


def test_a_rank_state_after_its_last_item_with_uneven_none_loads() -> None:
    import dload_arrow as dl

    ds = as_iterable_dataset(dl.from_iterable(list(range(61))), rank=0, world_size=2,
                             uneven="none", to_tensors=False)
    it = iter(ds)
    got = [next(it) for _ in range(31)]  # rank 0's last item: the 61st of the epoch
    assert got[-1] == 60 and (ds.state_dict()["epoch"], ds.state_dict()["position"]) == (1, 0)
    # A cursor a round of 2 past the 61 items (rank 0's, counted without the epoch's length,
    # as a worker counts) still loads, as the rest of epoch 0: nothing
    state = {**ds.state_dict(), "epoch": 0, "position": 62}
    again = as_iterable_dataset(dl.from_iterable(list(range(61))), rank=0, world_size=2,
                                uneven="none", to_tensors=False)
    again.load_state_dict(state)
    assert list(again) == []  # the rest of epoch 0: nothing
    with pytest.raises(ConfigError, match="past the end of epoch 0"):
        again.load_state_dict({**state, "position": 63})
