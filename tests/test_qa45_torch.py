"""QA round 45 (torch): a StatefulDataLoader state saved before a non-persistent worker's
first item of the next epoch, collate of Python ints among floats, negative strides."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sdl = pytest.importorskip("torchdata.stateful_dataloader")

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset, collate  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create:UserWarning", "ignore:'set_vital' is deprecated"
)


def test_a_state_saved_as_the_next_epoch_starts_does_not_replay_the_last(
        repo: Repository) -> None:
    repo.commit("d", [(f"k{i:02d}", {"x": i}) for i in range(6)], progress=False)

    def pipe() -> object:
        return repo.dataset("d").shuffle(buffer=3, seed=0)

    def epoch(e: int) -> list[str]:
        ds = as_iterable_dataset(pipe())
        ds.set_epoch(e)
        return [x["__key__"] for x in ds]

    ds = as_iterable_dataset(pipe())
    loader = sdl.StatefulDataLoader(ds, batch_size=None, num_workers=2)
    seen = [x["__key__"] for x in loader]  # epoch 0; epochs advance by themselves
    it = iter(loader)  # epoch 1 begins: workers started, no item yet
    state = loader.state_dict()
    del it
    again = as_iterable_dataset(pipe())
    again.load_state_dict(state)
    assert (again.state_dict()["epoch"], again.state_dict()["position"]) == (1, 0)
    for e in range(again.state_dict()["epoch"], 2):  # the TUTORIAL's resume loop
        again.set_epoch(e)
        seen += [x["__key__"] for x in sdl.StatefulDataLoader(again, batch_size=None,
                                                              num_workers=2)]
    assert sorted(seen) == sorted(epoch(0) + epoch(1))


def test_collate_makes_python_ints_among_floats_a_float64_tensor() -> None:
    for samples in ([{"w": 1.5}, {"w": 2}], [{"w": 1}, {"w": 2.5}]):
        got = collate(samples)["w"]
        assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
        assert got.tolist() == [float(s["w"]) for s in samples]
    assert collate([{"w": 1}, {"w": 2}])["w"].dtype == torch.int64


def test_a_flipped_array_becomes_a_tensor(repo: Repository) -> None:
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    repo.commit("imgs", [(f"k{i}", {"image": image}) for i in range(2)], progress=False)
    flip = repo.dataset("imgs").pipeline().map(lambda r: {**r, "image": np.fliplr(r["image"])})
    got = next(iter(as_iterable_dataset(flip)))["image"]
    assert torch.equal(got, torch.from_numpy(np.fliplr(image).copy()))
