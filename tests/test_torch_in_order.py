"""A loader with in_order=False cannot be checkpointed: its workers deliver out of turn, so
what the loop received is no prefix of the stream. Where dload_arrow sees the loader it says
so (was: the to_device wrapper saved a state that resumed with items lost and repeated)."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create:UserWarning", "ignore:'set_vital' is deprecated"
)
N = 40


def _slow_evens(sample: dict[str, Any]) -> dict[str, Any]:
    if sample["x"] % 2 == 0:  # worker 0's items: worker 1 runs ahead, out of turn
        time.sleep(0.02)
    return sample


@pytest.fixture
def pipe(repo: Repository) -> Any:
    repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(N)], progress=False)
    return repo.dataset("d").pipeline().map(_slow_evens)


def _save_after(batches: Any, steps: int) -> None:
    for step, _ in enumerate(batches):
        if step == steps:
            batches.state_dict()


def test_to_device_refuses_the_state_of_a_statefuldataloader_out_of_order(
        pipe: Any, caplog: pytest.LogCaptureFixture) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader")
    loader = sdl.StatefulDataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2,
                                    in_order=False)
    batches = to_device(loader, "cpu")
    with caplog.at_level(logging.WARNING), pytest.raises(
            ConfigError, match=r"in_order=False with 2 workers.*keep in_order=True"):
        _save_after(batches, 10)
    warned = [r for r in caplog.records if "in_order=False" in r.getMessage()]
    assert len(warned) <= 1  # the copy thread no longer asks torchdata for a state per item


def test_to_device_refuses_the_state_of_a_plain_dataloader_out_of_order(pipe: Any) -> None:
    loader = DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2,
                        in_order=False)
    with pytest.raises(ConfigError, match="DataLoader has in_order=False"):
        _save_after(to_device(loader, "cpu"), 3)


def test_in_order_false_without_workers_or_checkpoints_still_trains(pipe: Any) -> None:
    keys = [b["__key__"] for b in to_device(DataLoader(as_iterable_dataset(pipe),
                                                       batch_size=None, in_order=False), "cpu")]
    assert sorted(keys) == [f"k{i:03d}" for i in range(N)]
    got = to_device(DataLoader(as_iterable_dataset(pipe), batch_size=None, num_workers=2,
                               in_order=False), "cpu")
    assert sorted(b["__key__"] for b in got) == [f"k{i:03d}" for i in range(N)]
    with pytest.raises(ConfigError, match="in_order=False"):
        StatefulLoader(as_iterable_dataset(pipe), num_workers=2, in_order=False)
