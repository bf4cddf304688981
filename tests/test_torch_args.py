"""Torch arguments and states that used to pass silently: a rankless world size, a loader
with no state behind to_device, device names, float64 values in collate."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset, collate, to_device  # noqa: E402


@pytest.fixture
def pipe(repo: Repository) -> Any:
    repo.commit("d", [(f"k{i:03d}", {"x": i, "f": i / 4}) for i in range(40)], progress=False)
    return repo.dataset("d").shuffle(16, seed=2)


def test_a_world_size_without_a_rank_is_refused(pipe: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ConfigError, match="pass rank= too"):
        as_iterable_dataset(pipe, world_size=2)
    assert as_iterable_dataset(pipe, world_size=2, rank=1).rank == 1
    monkeypatch.setenv("RANK", "1")
    assert as_iterable_dataset(pipe, world_size=2).rank == 1  # the environment names it


def test_to_device_over_a_loader_without_state_says_so(pipe: Any) -> None:
    loader = to_device(DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2),
                       "cpu")
    it = iter(loader)
    next(it)
    with pytest.raises(ConfigError, match="StatefulLoader"):
        loader.state_dict()  # was None, saved, and refused only at resume
    del it
    with pytest.raises(ConfigError, match="keeps no state"):
        to_device([{"x": torch.zeros(1)}], "cpu").state_dict()


@pytest.mark.parametrize("device", [5, "nonsense", True])
def test_to_device_refuses_what_is_not_a_device(device: Any) -> None:
    with pytest.raises(ConfigError, match="device="):
        to_device([], device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_warns_and_stays_on_the_cpu() -> None:
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert to_device([], "cuda").device.type == "cpu"


def test_collate_keeps_float64_and_the_numpy_dtype() -> None:
    out = collate([{"a": 1.5, "b": np.float64(2.5), "c": np.float32(1.0), "d": 3},
                   {"a": 0.5, "b": np.float64(0.5), "c": np.float32(2.0), "d": 4}])
    assert out["a"].dtype == out["b"].dtype == torch.float64
    assert out["c"].dtype == torch.float32 and out["d"].dtype == torch.int64
    assert out["b"].tolist() == [2.5, 0.5]


def test_to_tensors_must_be_a_bool(pipe: Any) -> None:
    with pytest.raises(ConfigError, match="to_tensors"):
        as_iterable_dataset(pipe, to_tensors="no")  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where pinning fails")
def test_a_tensor_that_cannot_be_pinned_is_copied_unpinned_with_a_warning() -> None:
    from dload_arrow.torch.moves import pinned as _pinned

    t = torch.arange(6, dtype=torch.uint8).reshape(2, 3)
    with pytest.warns(UserWarning, match=r"cannot pin a \(2, 3\) torch.uint8 tensor .*without "
                                         r"pinning"):
        assert _pinned(t) is t
