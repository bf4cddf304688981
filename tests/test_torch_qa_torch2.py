"""QA pass "torch2": a peek at a loader mid-epoch ends the loop's iteration loudly (its
checkpoint would skip the rest of the epoch), and to_device's refusal names what works."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dload_arrow import ConfigError, Repository
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device


def _pipe(root: Path) -> Any:
    repo = Repository.open(root)
    if "d" not in repo.datasets():
        repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(30)], progress=False)
    return repo.dataset("d").shuffle(seed=5)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_peek_at_the_loader_mid_epoch_ends_the_loops_iteration(
        tmp_path: Path, workers: int) -> None:
    loader = StatefulLoader(as_iterable_dataset(_pipe(tmp_path)), num_workers=workers)
    seen = []
    with pytest.raises(ConfigError, match="ended by a newer iter"):
        for step, item in enumerate(loader):
            seen.append(int(item["x"]))
            if step == 9:
                next(iter(loader))  # before: the loop went on and the state followed the peek
    assert len(seen) == 10


def test_a_peek_at_the_dataset_mid_epoch_ends_the_loops_iteration(tmp_path: Path) -> None:
    ds = as_iterable_dataset(_pipe(tmp_path))
    it = iter(ds)
    head = [next(it) for _ in range(5)]
    next(iter(ds))
    with pytest.raises(ConfigError, match="ended by a newer iter"):
        next(it)
    assert len(head) == 5


def test_leaving_a_loop_and_starting_again_is_no_peek(tmp_path: Path) -> None:
    ds = as_iterable_dataset(_pipe(tmp_path))
    loader = StatefulLoader(ds, num_workers=2)
    for step, _ in enumerate(loader):
        if step == 3:
            break
    ds.set_epoch(0)
    assert len(list(loader)) == 30  # the abandoned iteration is never read again


def test_to_device_over_a_plain_dataloader_with_workers_names_the_loaders_that_keep_state(
        tmp_path: Path) -> None:
    from torch.utils.data import DataLoader

    loader = DataLoader(as_iterable_dataset(_pipe(tmp_path)), batch_size=None, num_workers=2)
    batches = to_device(loader, "cpu")
    for i, _ in enumerate(batches):
        if i == 3:
            break
    refused = r"keeps no state to save; wrap a dload_arrow\.torch\.StatefulLoader"
    with pytest.raises(ConfigError, match=refused) as e:
        batches.state_dict()
    assert "the wrapper's" not in str(e.value)  # before: advised the very call that failed
