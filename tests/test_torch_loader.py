"""Pipelines in torch DataLoaders: exact coverage, worker-independent order, ranks, resume."""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.pipeline.sources import from_iterable  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device  # noqa: E402

N = 60

pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create:UserWarning", "ignore:'set_vital' is deprecated"
)


@pytest.fixture
def toy(repo: Repository) -> Any:
    """60 samples in 3 shards of 6-row row groups, on a local root."""
    pairs = [
        (f"k{i:04d}", {"x": np.full((2, 3), i, np.float32), "label": i, "jpeg": bytes([i])})
        for i in range(N)
    ]
    repo.commit("toy", pairs, shard_size=1024, row_group_size=256, progress=False)
    return repo.dataset("toy")


def _keys(items: Any) -> list[str]:
    out: list[str] = []
    for item in items:
        key = item["__key__"]
        out.extend(key if isinstance(key, list) else [key])
    return out


def _reference(pipe: Any, epoch: int) -> list[str]:
    view = pipe.skip(0)
    view.set_epoch(epoch)
    return _keys(view)


def test_workers_0_1_2_deliver_every_sample_once_in_one_order(toy):
    pipe = toy.shuffle(16, seed=7)
    ref0, ref1 = _reference(pipe, 0), _reference(pipe, 1)
    assert sorted(ref0) == sorted(ref1) == [f"k{i:04d}" for i in range(N)] and ref0 != ref1
    for workers in (0, 1, 2):
        ds = as_iterable_dataset(pipe)
        loader = DataLoader(ds, batch_size=None, num_workers=workers)
        assert _keys(loader) == ref0, workers
        assert _keys(loader) == ref1, workers  # the next iter() is the next epoch


def test_batches_are_the_same_whatever_the_workers(toy):
    pipe = toy.shuffle(16, seed=1).batch(8)
    ref = [b["label"].tolist() for b in DataLoader(as_iterable_dataset(pipe), batch_size=None)]
    got = [
        b["label"].tolist()
        for b in DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2)
    ]
    assert got == ref and sum(len(b) for b in got) == N
    first = next(iter(DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2)))
    assert first["x"].shape == (8, 2, 3) and isinstance(first["jpeg"], list)


def test_persistent_workers_follow_set_epoch_and_advance_by_themselves(toy):
    pipe = toy.shuffle(16, seed=3)
    ds = as_iterable_dataset(pipe)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    assert _keys(loader) == _reference(pipe, 0)
    assert _keys(loader) == _reference(pipe, 1)
    ds.set_epoch(5)
    assert _keys(loader) == _reference(pipe, 5)
    assert _keys(loader) == _reference(pipe, 6)


def _rank_main(pipe: Any, rank: int, world: int, uneven: str, mode: str, path: str, q: Any):
    import os

    import torch.distributed as dist

    if mode == "env":
        os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world)
    else:
        dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world)
    ds = as_iterable_dataset(pipe, uneven=uneven)  # the pipeline knows its length
    keys = _keys(DataLoader(ds, batch_size=None, num_workers=2))
    q.put((rank, ds.rank, ds.world_size, keys))
    if mode == "gloo":
        dist.destroy_process_group()


@pytest.mark.parametrize(
    ("world", "uneven", "mode", "n"), [(3, "none", "env", 59), (4, "pad", "gloo", 58)]
)
def test_ranks_as_processes_cover_the_epoch_with_equal_lengths(
    toy, tmp_path, world, uneven, mode, n
):
    pipe = toy.shuffle(16, seed=5).take(n)
    ref = _reference(pipe, 0)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [
        ctx.Process(target=_rank_main, args=(pipe, r, world, uneven, mode, str(tmp_path / "pg"), q))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    got = {r: (rr, ww, keys) for r, rr, ww, keys in (q.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert all(got[r][:2] == (r, world) for r in range(world))  # rank from env / torch.distributed
    streams = [got[r][2] for r in range(world)]
    lockstep = [k for row in itertools.zip_longest(*streams) for k in row if k is not None]
    assert lockstep[:n] == ref  # rank-major deal of the one global stream
    lengths = [len(s) for s in streams]
    if uneven == "none":  # 59 over 3 ranks: every sample once, lengths differ by one
        assert lengths == [20, 20, 19] and sorted(lockstep) == sorted(ref)
    else:  # 58 over 4 ranks: equal lengths, the first two samples repeated as padding
        assert lengths == [15] * 4 and sorted(lockstep) == sorted(ref + ref[:2])


def test_padding_and_dropping_give_equal_rank_lengths(toy):
    pipe = toy.pipeline().take(58)
    ref = _reference(pipe, 0)
    assert len(pipe) == 58
    pad = [_keys(as_iterable_dataset(pipe, rank=r, world_size=4)) for r in range(4)]
    assert [len(s) for s in pad] == [15] * 4
    assert sorted(k for s in pad for k in s) == sorted(ref + ref[:2])  # repeats the first two
    unknown = pipe.filter(lambda row: True)  # a filter hides the length: length= says it
    drop = [_keys(as_iterable_dataset(unknown, rank=r, world_size=4, uneven="drop", length=58))
            for r in range(4)]
    assert [len(s) for s in drop] == [14] * 4
    assert sorted(k for s in drop for k in s) == sorted(ref[:56])


def test_pad_without_a_known_length_says_how_to_fix(toy):
    pipe = toy.pipeline().filter(lambda row: row["label"] % 2 == 0)
    ds = as_iterable_dataset(pipe, rank=0, world_size=2)
    with pytest.raises(ConfigError, match="pass length="):
        iter(ds)


def _consume(layout: tuple[int, int], pipe: Any, per_rank: int | None, state: Any) -> Any:
    """Run ranks of a layout in lockstep: per_rank items each (None: to the end)."""
    world, workers = layout
    out: list[str] = []
    rank0_state = None
    for r in range(world):
        ds = as_iterable_dataset(pipe, rank=r, world_size=world, uneven="none")
        if state is not None:
            ds.load_state_dict(state)
        loader = StatefulLoader(ds, num_workers=workers)
        it = iter(loader)
        for _ in range(per_rank if per_rank is not None else 1 << 30):
            item = next(it, None)
            if item is None:
                break
            out.append(item["__key__"])
        if r == 0:
            rank0_state = loader.state_dict()
        del it
    return out, rank0_state


def test_checkpoint_at_two_ranks_two_workers_resumes_at_one_rank_three_workers(toy):
    pipe = toy.shuffle(16, seed=11)
    ref = _reference(pipe, 0)
    before, state = _consume((2, 2), pipe, 9, None)
    assert state["epoch"] == 0 and state["position"] == 18
    after, _ = _consume((1, 3), pipe, None, state)
    assert sorted(before + after) == sorted(ref)  # nothing lost, nothing repeated
    assert after == ref[18:]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=st.tuples(st.integers(1, 4), st.just(0)),
    after=st.tuples(st.integers(1, 4), st.just(0)),
    data=st.data(),
)
def test_resume_anywhere_with_other_ranks_and_workers(toy, before, after, data):
    pipe = toy.shuffle(16, seed=2)
    ref = _reference(pipe, 0)
    k = data.draw(st.integers(0, -(-N // before[0])), label="items per rank before the checkpoint")
    got_before, state = _consume(before, pipe, k, None)
    got_after, _ = _consume(after, pipe, None, state)
    if state["epoch"] == 1:  # every rank took its last item: the resume starts epoch 1
        assert sorted(got_before) == sorted(ref) and state["position"] == 0
        got_before, ref = [], _reference(pipe, 1)
    assert sorted(got_before + got_after) == sorted(ref)


def test_checkpoint_after_every_ranks_last_item_resumes_at_the_next_epoch(toy):
    """(The case hypothesis found now and then: 4 ranks x 15 items of 60, resumed by one.)"""
    pipe = toy.shuffle(16, seed=2)
    before, state = _consume((4, 0), pipe, N // 4, None)
    assert sorted(before) == sorted(_reference(pipe, 0))
    assert (state["epoch"], state["position"]) == (1, 0)
    after, _ = _consume((1, 0), pipe, None, state)
    assert after == _reference(pipe, 1)


def test_state_reflects_what_the_trainer_consumed_not_prefetched(toy):
    pipe = toy.shuffle(16, seed=4)
    ds = as_iterable_dataset(pipe)
    loader = StatefulLoader(ds, num_workers=2, prefetch_factor=4)
    it = iter(loader)
    first = [next(it)["__key__"] for _ in range(5)]
    assert loader.state_dict()["position"] == 5 == ds.state_dict()["position"]
    rest = _keys(it)
    assert first + rest == _reference(pipe, 0)
    assert loader.state_dict() == {"format": "dload.torch/1", "epoch": 1, "position": 0,
                                   "pipeline": pipe.state_dict()["pipeline"],
                                   "datasets": pipe.state_dict()["datasets"]}


def test_main_process_loader_state_and_set_epoch_after_load(toy):
    pipe = toy.shuffle(16, seed=8)
    ds = as_iterable_dataset(pipe)
    it = iter(DataLoader(ds, batch_size=None, num_workers=0))
    head = [next(it)["__key__"] for _ in range(7)]
    state = ds.state_dict()
    assert (state["epoch"], state["position"]) == (0, 7)
    resumed = as_iterable_dataset(pipe)
    resumed.load_state_dict(state)
    resumed.set_epoch(0)  # the usual training loop: keeps the loaded position
    tail = _keys(DataLoader(resumed, batch_size=None, num_workers=2))
    assert head + tail == _reference(pipe, 0)
    resumed.set_epoch(1)
    assert _keys(DataLoader(resumed, batch_size=None)) == _reference(pipe, 1)


def test_spawned_persistent_workers_see_set_epoch(toy):
    pipe = toy.shuffle(16, seed=12)
    ds = as_iterable_dataset(pipe)
    loader = DataLoader(ds, batch_size=None, num_workers=1, persistent_workers=True,
                        multiprocessing_context="spawn")
    assert _keys(loader) == _reference(pipe, 0)
    ds.set_epoch(4)
    assert _keys(loader) == _reference(pipe, 4)


def test_stateful_dataloader_resumes_same_and_other_worker_counts(toy):
    sdl_mod = pytest.importorskip("torchdata.stateful_dataloader")
    pipe = toy.shuffle(16, seed=9)
    ref = _reference(pipe, 0)
    loader = sdl_mod.StatefulDataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2)
    it = iter(loader)
    head = [next(it)["__key__"] for _ in range(13)]
    state = loader.state_dict()
    del it
    same = sdl_mod.StatefulDataLoader(
        as_iterable_dataset(pipe), batch_size=None, num_workers=2, persistent_workers=True
    )
    same.load_state_dict(state)
    assert head + _keys(same) == ref
    assert _keys(same) == _reference(pipe, 1)  # and the epochs go on from there
    other = as_iterable_dataset(pipe)
    other.load_state_dict(state)  # the loader state, read back into one global position
    assert other.state_dict()["position"] == 13
    tail = _keys(sdl_mod.StatefulDataLoader(other, batch_size=None, num_workers=1))
    assert head + tail == ref


def test_state_size_does_not_grow_with_dataset_or_shuffle_buffer(repo):
    sizes = set()
    for n, buffer in ((20, 2), (3000, 2), (3000, 2000)):
        repo.commit(f"d{n}", [(f"k{i:05d}", {"v": i}) for i in range(n)], progress=False)
        pipe = repo.dataset(f"d{n}").shuffle(buffer, seed=1)
        loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=0)
        it = iter(loader)
        for _ in range(15):
            next(it)
        state = loader.state_dict()
        assert state["position"] == 15
        state.pop("datasets")  # (the dataset's name and version: as long as the name)
        sizes.add(len(pickle.dumps(state)))
    assert len(sizes) == 1 and sizes.pop() < 256


def test_to_device_on_cpu_prefetches_and_keeps_the_state_exact(toy):
    pipe = toy.shuffle(16, seed=6).batch(4)
    with contextlib.nullcontext() if torch.cuda.is_available() else pytest.warns(
            UserWarning, match="CUDA is not available"):
        loader = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=0), "cuda", 2)
    assert loader.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    it = iter(loader)
    got = [next(it) for _ in range(3)]
    assert all(b["x"].device.type == loader.device.type for b in got)
    assert loader.state_dict()["position"] == 3  # not what the thread prefetched
    rest = list(it)
    labels = [int(v) for b in got + rest for v in b["label"]]
    assert sorted(labels) == list(range(N)) and len(got + rest) == N // 4
    assert loader.state_dict()["epoch"] == 1  # the epoch ended: the next one starts at 0
    with pytest.raises(ConfigError, match="prefetch=0"):
        to_device(loader, "cpu", 0)


def test_errors_say_what_to_fix(toy):
    ds = as_iterable_dataset(toy.pipeline())
    with pytest.raises(ConfigError, match="batch in the pipeline"):
        StatefulLoader(ds, batch_size=4)
    with pytest.raises(ConfigError, match="not a dload_arrow torch state"):
        ds.load_state_dict({"epoch": 1})
    with pytest.raises(ConfigError, match="rank=2, world_size=2"):
        as_iterable_dataset(toy.pipeline(), rank=2, world_size=2)
    with pytest.raises(ConfigError, match="uneven='spread'"):
        as_iterable_dataset(toy.pipeline(), uneven="spread")  # type: ignore[arg-type]


def test_from_iterable_pipelines_stream_too():
    pipe = from_iterable([{"__key__": f"s{i}", "v": i} for i in range(11)]).shuffle(4, seed=1)
    got = _keys(DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2))
    assert got == _reference(pipe, 0) and len(got) == 11


def test_rank_zeros_stateful_dataloader_state_resumes_every_rank(toy):
    sdl_mod = pytest.importorskip("torchdata.stateful_dataloader")
    pipe = toy.shuffle(16, seed=13)

    def loader(rank: int) -> Any:
        ds = as_iterable_dataset(pipe, rank=rank, world_size=2, uneven="none")
        return sdl_mod.StatefulDataLoader(ds, batch_size=None, num_workers=1)

    full = [_keys(loader(r)) for r in range(2)]
    first = loader(0)
    it = iter(first)
    for _ in range(4):
        next(it)
    state = first.state_dict()  # only rank 0 saves, as DDP jobs usually do
    del it
    for r in range(2):
        resumed = loader(r)
        resumed.load_state_dict(state)
        assert _keys(resumed) == full[r][4:]


def test_a_dataset_streams_in_storage_order_and_other_objects_are_refused(toy):
    keys = _keys(DataLoader(as_iterable_dataset(toy), batch_size=None, num_workers=0))
    assert keys == [f"k{i:04d}" for i in range(N)]
    with pytest.raises(TypeError, match="cannot stream a list into torch"):
        as_iterable_dataset([1, 2, 3])


def test_an_infeasible_plan_fails_in_the_main_process_before_workers_start(memory_root, cache_dir):
    from dload_arrow import InfeasiblePlanError

    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="1KB")
    repo.commit("big", [(f"k{i:04d}", {"v": np.arange(64)}) for i in range(200)], progress=False)
    pipe = repo.dataset("big").shuffle(full=True, seed=0)
    loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=2)
    with pytest.raises(InfeasiblePlanError):
        next(iter(loader))
    assert loader.dataset.check(2).feasible is False


def _small_slice(batch: Any) -> Any:
    return batch.slice(1000, 50)


def test_a_worker_sends_arrow_slices_without_their_parents_buffers() -> None:
    """Pickling a slice writes the parent's buffers: workers copy slices out first."""
    pa = pytest.importorskip("pyarrow")
    n = 200_000
    big = pa.record_batch({"x": pa.array(np.arange(n)), "s": pa.array(["abcdefgh"] * n)})
    pipe = from_iterable([big, big, big]).map(_small_slice)
    for workers in (0, 2):
        got = list(
            DataLoader(as_iterable_dataset(pipe, to_tensors=False), batch_size=None,
                       num_workers=workers)
        )
        assert len(got) == 3
        for b in got:
            assert b.column("x").to_pylist() == list(range(1000, 1050)), workers
            if workers:  # what crossed the process boundary is the slice's bytes, not 3.4 MB
                assert b.get_total_buffer_size() < 4096, b.get_total_buffer_size()
    table = pa.Table.from_batches([big.slice(10, 5), big.slice(20, 5)])
    from dload_arrow.torch.source import compact

    small = compact(table)
    assert small.equals(table) and small.get_total_buffer_size() < 4096
    assert compact(big) is big  # a whole batch is sent as is


_AFTER_A_FAILED_EPOCH = """
import sys
import dload_arrow as dl
from dload_arrow.torch import StatefulLoader, as_iterable_dataset

def bad(r):
    if r["x"] == 700:
        raise ValueError("bad row 700")
    return r

if __name__ == "__main__":
    repo = dl.Repository.open(sys.argv[1] + "/root", cache_dir=sys.argv[1] + "/cache")
    repo.commit("d", [(f"k{i:05d}", {"x": i}) for i in range(2000)], progress=False,
                row_group_size=4000)
    ds = repo.dataset("d")
    try:
        list(StatefulLoader(as_iterable_dataset(ds.pipeline().map(bad).batch(32)),
                            num_workers=2))
    except ValueError as e:
        print("raised:", "bad row 700" in str(e))
    loader = StatefulLoader(as_iterable_dataset(ds.pipeline().batch(32)), num_workers=2)
    print(next(iter(loader))["x"].shape[0])  # an epoch left early
    print(sum(len(b["x"]) for b in loader))
"""


def test_a_failed_or_abandoned_epoch_stops_its_workers_cleanly(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(_AFTER_A_FAILED_EPOCH)
    out = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["raised: True", "32", "2000"], out.stdout
    assert "Exception ignored" not in out.stderr, out.stderr


def test_persistent_workers_serve_every_epoch_and_survive_an_epoch_left_early(toy):
    pipe = toy.shuffle(16, seed=3)
    loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=2, persistent_workers=True)
    for epoch in range(2):
        assert sorted(_keys(iter(loader))) == sorted(_reference(pipe, epoch))
    it = iter(loader)
    next(it)
    del it  # left early: its workers stop, the next epoch starts new ones
    assert len(_keys(iter(loader))) == len(_reference(pipe, 0))


class _Interrupt:
    """A map that raises KeyboardInterrupt (a Ctrl-C in a notebook) once, at item ``k``."""

    def __init__(self, k: int | None) -> None:
        self.k = k

    def __call__(self, x: int) -> int:
        if x == self.k:
            self.k = None
            raise KeyboardInterrupt
        return x


@pytest.mark.parametrize("through", ["dataset", "StatefulLoader"])
def test_going_on_after_a_ctrl_c_is_refused_and_the_state_resumes_exactly(
        through: str) -> None:
    """Review 53: the torch iterations are generators, which a Ctrl-C ends: going on with the
    same iterator gave no more items and no error (256 of 1,000: the epoch silently short)."""
    def make(k: int | None) -> Any:
        ds = as_iterable_dataset(from_iterable(list(range(1000)), chunk=64)
                                 .map(_Interrupt(k)), to_tensors=False)
        return ds, (ds if through == "dataset" else StatefulLoader(ds))

    _, src = make(500)
    it, got = iter(src), []
    with pytest.raises(KeyboardInterrupt):
        for x in it:
            got.append(x)
    state = src.state_dict()
    with pytest.raises(ConfigError, match=r"ended with KeyboardInterrupt after \d+ item.*"
                       r"load it \(ds\.load_state_dict\(state\)\) and iterate again"):
        next(it)
    ds2, src2 = make(None)
    ds2.load_state_dict(state)
    assert got + list(src2) == list(range(1000))
