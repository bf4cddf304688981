"""to_device checks the device up front: one torch names but this machine lacks is a
ConfigError naming it and the devices available (was torch's raw error from the copy thread)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device  # noqa: E402
from dload_arrow.torch.accelerators import available_devices  # noqa: E402


@pytest.fixture
def loader(repo: Repository) -> Any:
    repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(8)], progress=False)
    return StatefulLoader(as_iterable_dataset(repo.dataset("d").pipeline().batch(4)))


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="needs a machine without MPS")
@pytest.mark.parametrize("device", ["mps", "mps:0"])
def test_a_missing_mps_device_is_named_with_the_available_ones(loader: Any, device: str) -> None:
    with pytest.raises(ConfigError, match=rf"device='{device}' is not available here .*can use "
                                          r"cpu"):
        to_device(loader, device)
    with pytest.raises(ConfigError, match="is not available here"):
        to_device(loader, torch.device(device))


def test_a_device_type_without_a_backend_is_refused(loader: Any) -> None:
    with pytest.raises(ConfigError, match="device='hpu' is not available here"):
        to_device(loader, "hpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_index_past_the_devices_is_refused(loader: Any) -> None:
    n = torch.cuda.device_count()
    with pytest.raises(ConfigError, match=rf"cuda:{n}' is not available here \({n} cuda"):
        to_device(loader, f"cuda:{n}")


def test_cpu_and_meta_always_work(loader: Any) -> None:
    assert available_devices()[0] == "cpu"
    batches = list(to_device(loader, "cpu"))
    assert [b["x"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert {b["x"].device.type for b in list(to_device(loader, "meta"))} == {"meta"}
