"""to_device on a real CUDA device: pinned, non-blocking copies on a side stream, exact state.

These need a GPU (CI has none: they run on the device machine, see bench/gpu_check.py); the
CPU fallback of the same wrapper is covered in test_torch_loader.py and test_torch_args.py.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
    pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning"),
]

N = 96


@pytest.fixture
def images(repo: Repository) -> Any:
    """96 small images of every numeric dtype a training set holds, in several shards."""
    def sample(i: int) -> dict[str, Any]:
        rng = np.random.default_rng(i)
        return {
            "image": rng.integers(0, 256, (3, 16, 16), dtype=np.uint8),
            "half": rng.standard_normal(8).astype(np.float16),
            "depth": rng.integers(0, 2**16, (4, 4), dtype=np.uint16),
            "ids": rng.integers(0, 2**32, 5, dtype=np.uint32),
            "mask": rng.random(6) > 0.5,
            "label": i,
        }

    repo.commit("img", ((f"k{i:04d}", sample(i)) for i in range(N)), shard_size=8192,
                row_group_size=16, progress=False)
    return repo.dataset("img")


def _host(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], torch.Tensor):
            assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


@pytest.mark.parametrize("workers,pin", [(0, False), (2, True), (2, False)])
def test_batches_arrive_on_the_gpu_equal_to_the_cpu_ones(images: Any, workers: int,
                                                         pin: bool) -> None:
    pipe = images.shuffle(32, seed=3).batch(8)
    reference = list(StatefulLoader(as_iterable_dataset(pipe), num_workers=0))
    loader = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=workers,
                                      pin_memory=pin), "cuda", prefetch=3)
    got = []
    for batch in loader:
        assert {v.device.type for v in batch.values() if isinstance(v, torch.Tensor)} == \
            {"cuda"}
        # use it at once on the loop's stream: the copy must be complete by then
        batch["sum"] = batch["image"].to(torch.int64).sum(dim=(1, 2, 3))
        got.append(_host(batch))
    assert len(got) == len(reference) == N // 8
    for g, r in zip(got, reference, strict=True):
        assert torch.equal(g.pop("sum"), r["image"].to(torch.int64).sum(dim=(1, 2, 3)))
        _same(g, r)


def test_a_checkpoint_mid_epoch_on_the_gpu_resumes_exactly(images: Any) -> None:
    pipe = images.shuffle(32, seed=4).batch(6)
    loader = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=2), "cuda:0",
                       prefetch=4)
    it = iter(loader)
    first = [next(it) for _ in range(5)]
    state = loader.state_dict()
    assert state["position"] == 5  # not what the copy thread had prefetched
    del it
    again = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=2),
                      torch.device("cuda", 0))
    again.load_state_dict(state)
    rest = list(again)
    labels = [int(v) for b in first + rest for v in b["label"].cpu()]
    assert sorted(labels) == list(range(N)) and len(first + rest) == N // 6


def test_persistent_workers_over_three_epochs_deliver_each_sample_once(images: Any) -> None:
    pipe = images.shuffle(32, seed=5).batch(12)
    loader = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=2,
                                      persistent_workers=True, pin_memory=True), "cuda")
    orders = []
    for epoch in range(3):
        loader.set_epoch(epoch)
        labels = [int(v) for b in loader for v in b["label"].cpu()]
        assert sorted(labels) == list(range(N))
        orders.append(labels)
    assert orders[0] != orders[1]


def test_leaving_the_loop_early_stops_the_copy_thread_and_frees_the_memory(
        images: Any) -> None:
    pipe = images.pipeline().batch(4)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    loader = to_device(StatefulLoader(as_iterable_dataset(pipe), num_workers=0), "cuda",
                       prefetch=4)
    for i, _batch in enumerate(loader):
        if i == 2:
            break
    thread = loader._link.thread
    assert thread is not None
    thread.join(timeout=10)
    assert not thread.is_alive()
    del _batch, loader
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before


def test_tensors_already_on_the_gpu_and_nested_items_pass_through() -> None:
    on_gpu = torch.arange(4, device="cuda")
    items = [{"a": on_gpu, "b": [torch.ones(2), (torch.zeros(3, dtype=torch.uint8), "s")]}]
    (got,) = list(to_device(items, "cuda"))
    assert got["a"].device.type == "cuda" and torch.equal(got["a"], on_gpu)
    assert got["b"][0].device.type == got["b"][1][0].device.type == "cuda"
    assert got["b"][1][1] == "s" and torch.equal(got["b"][1][0].cpu(), torch.zeros(3))
