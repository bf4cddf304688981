"""A torchdata StatefulDataLoader with a batch_size: its state resumes exactly, or is refused.

Such a loader takes a whole batch from one worker a step while items are dealt to workers in
turn, and its state counts the steps since its last snapshot, not items. Read into another
layout, a state resumes only when what was taken is one prefix of the stream (one worker, or
every worker's share of a prefix); any other is refused. The same layout always resumes
through the loader's own load_state_dict.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")
sdl_mod = pytest.importorskip("torchdata.stateful_dataloader")

from dload_arrow import ConfigError, Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset  # noqa: E402

N = 60

pytestmark = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated")


@pytest.fixture
def pipe(repo: Repository) -> Any:
    repo.commit("toy", [(f"k{i:04d}", {"label": i}) for i in range(N)], shard_size=1024,
                row_group_size=256, progress=False)
    return repo.dataset("toy").shuffle(16, seed=9)


def _keys(items: Any) -> list[str]:
    out: list[str] = []
    for item in items:
        batch = item if isinstance(item, list) else [item]
        out.extend(x["__key__"] for x in batch)
    return out


def _same(x: Any) -> Any:
    return x  # items as the dataset yields them; a batch as a list of them


def _loader(ds: Any, batch_size: int | None, workers: int, every: int = 1) -> Any:
    return sdl_mod.StatefulDataLoader(ds, batch_size=batch_size, num_workers=workers,
                                      snapshot_every_n_steps=every, collate_fn=_same)


def _take(loader: Any, steps: int) -> tuple[list[str], Any]:
    it = iter(loader)
    head = _keys(next(it) for _ in range(steps))
    state = loader.state_dict()
    del it
    return head, state


@pytest.mark.parametrize(("batch_size", "workers", "every", "steps"), [
    (4, 1, 3, 7), (4, 1, 1, 7), (3, 1, 2, 5), (4, 2, 1, 4), (None, 2, 3, 7)])
def test_a_state_that_took_a_prefix_resumes_with_other_workers_exactly_once(
        pipe: Any, batch_size: int | None, workers: int, every: int, steps: int) -> None:
    ref = _keys(_loader(as_iterable_dataset(pipe), None, 0))
    assert sorted(ref) == [f"k{i:04d}" for i in range(N)]
    head, state = _take(_loader(as_iterable_dataset(pipe), batch_size, workers, every), steps)
    n = steps * (batch_size or 1)
    assert sorted(head) == sorted(ref[:n])  # batches from two workers: a prefix, reordered
    other = as_iterable_dataset(pipe)
    other.load_state_dict(state)  # one global position, for another number of workers
    assert other.state_dict()["position"] == n
    assert _keys(_loader(other, None, 3 - workers)) == ref[n:]


@pytest.mark.parametrize(("workers", "every", "steps", "match"), [
    (2, 1, 3, r"yielded \[8, 4\] items \(\+0 steps since\)"),
    (2, 2, 3, r"\+1 steps since"),
    (1, 3, 2, r"2 steps after its last snapshot"),
])
def test_a_state_that_is_not_one_position_is_refused_with_the_fix(
        pipe: Any, workers: int, every: int, steps: int, match: str) -> None:
    _, state = _take(_loader(as_iterable_dataset(pipe), 4, workers, every), steps)
    with pytest.raises(ConfigError, match=match + r".*same num_workers.*batch_size=None"):
        as_iterable_dataset(pipe).load_state_dict(state)


def test_the_same_layout_resumes_a_batched_state_through_the_loader(pipe: Any) -> None:
    ref = _keys(_loader(as_iterable_dataset(pipe), 4, 2))
    head, state = _take(_loader(as_iterable_dataset(pipe), 4, 2, every=2), 3)
    again = _loader(as_iterable_dataset(pipe), 4, 2, every=2)
    again.load_state_dict(state)
    assert head + _keys(again) == ref
