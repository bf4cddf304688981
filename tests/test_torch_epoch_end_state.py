"""A state taken right after a rank's last item of an epoch says the next epoch, position 0,
with one rank as with several: one rank knows its epoch ended from the pipeline's len() (no
read; asked once per iteration), not only once its iterator is asked for one more item."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

from dload_arrow import Repository  # noqa: E402
from dload_arrow.pipeline.sources import from_iterable  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset  # noqa: E402

N = 12

pytestmark = pytest.mark.filterwarnings(
    "ignore:This DataLoader will create:UserWarning", "ignore:'set_vital' is deprecated"
)


@pytest.fixture
def pipe(repo: Repository) -> Any:
    repo.commit("d", [(f"k{i:02d}", {"x": np.float32(i)}) for i in range(N)], progress=False)
    return repo.dataset("d").shuffle(4, seed=3)


def _cursor(state: dict[str, Any]) -> tuple[int, int]:
    return state["epoch"], state["position"]


def _take(it: Any, n: int) -> None:
    for _ in range(n):
        next(it)


@pytest.mark.parametrize(("world_size", "uneven"), [(1, "pad"), (2, "pad"), (3, "drop"),
                                                   (5, "none"), (5, "pad")])
def test_a_state_after_the_last_item_says_the_next_epoch_for_any_number_of_ranks(
        pipe: Any, world_size: int, uneven: Any) -> None:
    for rank in range(world_size):
        ds = as_iterable_dataset(pipe, rank=rank, world_size=world_size, uneven=uneven)
        it = iter(DataLoader(ds, batch_size=None, num_workers=0))
        _take(it, len(ds) - 1)
        assert _cursor(ds.state_dict()) == (0, (len(ds) - 1) * world_size)
        next(it)  # the rank's last item; its iterator is not asked for more
        assert _cursor(ds.state_dict()) == (1, 0), (rank, world_size)
        assert list(it) == []
        assert _cursor(ds.state_dict()) == (1, 0)


def test_one_rank_iterated_directly_and_through_a_stateful_loader(pipe: Any) -> None:
    ds = as_iterable_dataset(pipe)
    it = iter(ds)
    _take(it, N)
    assert _cursor(ds.state_dict()) == (1, 0)
    ds = as_iterable_dataset(pipe)
    loader = StatefulLoader(ds, num_workers=2)
    it = iter(loader)
    _take(it, N)
    assert _cursor(loader.state_dict()) == (1, 0) == _cursor(ds.state_dict())


def test_a_resumed_epoch_ends_at_the_same_place(pipe: Any) -> None:
    first = as_iterable_dataset(pipe)
    _take(iter(first), 5)
    ds = as_iterable_dataset(pipe)
    ds.load_state_dict(first.state_dict())
    it = iter(ds)
    _take(it, N - 5)
    assert _cursor(ds.state_dict()) == (1, 0)


def test_a_pipeline_of_unknown_length_says_so_only_once_its_iterator_ends() -> None:
    """len() unknown (a generator): telling the end would take a read of one more item,
    which state_dict() does not do; the next next() (StopIteration) moves it on."""
    pipe = from_iterable(lambda: ({"x": i} for i in range(N)), finite=True)
    ds = as_iterable_dataset(pipe, to_tensors=False)
    it = iter(ds)
    _take(it, N)
    assert _cursor(ds.state_dict()) == (0, N)
    assert list(it) == []
    assert _cursor(ds.state_dict()) == (1, 0)
