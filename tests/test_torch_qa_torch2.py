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


def test_a_peek_ends_the_older_iteration_in_its_padding_too() -> None:
    import dload_arrow as dl

    ds = as_iterable_dataset(dl.from_iterable(list(range(5))), rank=1, world_size=2,
                             to_tensors=False)
    it = iter(ds)
    assert [next(it), next(it)] == [1, 3]  # its real items; a padding item comes next
    next(iter(ds))
    with pytest.raises(ConfigError, match="ended by a newer iter"):
        next(it)


def test_to_device_passes_strict_false_to_the_loader(tmp_path: Path) -> None:
    import dload_arrow as dl

    def make(fn: Any) -> Any:
        return as_iterable_dataset(dl.from_iterable([5, 4, 0, 2, 1]).map(fn), to_tensors=False)

    first = to_device(StatefulLoader(make(_inverse)), "cpu")
    got = []
    with pytest.raises(ZeroDivisionError):
        for x in first:
            got.append(x)
    state = first.state_dict()
    fixed = to_device(StatefulLoader(make(_inverse_fixed)), "cpu")
    fixed.load_state_dict(state, strict=False)  # before: TypeError
    assert got + list(fixed) == [20, 25, 0, 50, 100]


def _inverse(x: int) -> int:
    return 100 // x


def _inverse_fixed(x: int) -> int:
    return 100 // x if x else 0


def test_to_devices_producer_left_behind_by_a_new_loop_ends(tmp_path: Path) -> None:
    import threading
    import time

    from torch.utils.data import DataLoader

    import dload_arrow as dl

    slow, sleeping = threading.Event(), threading.Event()

    def item(x: int) -> dict[str, int]:
        if slow.is_set() and not sleeping.is_set():
            sleeping.set()
            time.sleep(6)  # past the 5 s the loop waits for its producer when it leaves
        return {"x": x}

    ds = as_iterable_dataset(dl.from_iterable(list(range(10_000))).map(item))
    dev = to_device(DataLoader(ds, batch_size=None, num_workers=0), "cpu", prefetch=2)
    before = set(threading.enumerate())
    for i, _ in enumerate(dev):
        slow.set()
        if sleeping.wait(0.01) or i > 5000:
            break
    assert sum(1 for _ in dev) == 10_000  # a new epoch ends the old iteration
    time.sleep(2)  # the old producer wakes up to a ConfigError it cannot hand over
    left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == []  # before: blocked forever on a full queue nobody reads
