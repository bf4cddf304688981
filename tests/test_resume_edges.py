"""Resumption edges from QA: set_epoch right after load_state_dict, and torch checkpoints
loaded into a different pipeline."""

from __future__ import annotations

from typing import Any

import pytest

from dload_arrow import ConfigError, Repository
from dload_arrow.pipeline import Pipeline

N = 200


@pytest.fixture
def src(repo: Repository) -> Any:
    repo.commit("src", [(f"k{i:04d}", {"x": i}) for i in range(N)], progress=False)
    return repo.dataset("src")


def _xs(items: Any) -> list[int]:
    return [int(item["x"]) for item in items]


def _saved_after(pipe: Pipeline, k: int) -> dict[str, Any]:
    it = iter(pipe)
    for _ in range(k):
        next(it)
    return pipe.state_dict()


def test_set_epoch_with_the_loaded_epoch_keeps_the_loaded_position(src: Any) -> None:
    full = _xs(src.shuffle(seed=1))
    state = _saved_after(src.shuffle(seed=1), 30)
    p = src.shuffle(seed=1)
    p.load_state_dict(state)
    p.set_epoch(state["epoch"])  # the usual loop: for e in range(saved, n): p.set_epoch(e)
    assert _xs(p) == full[30:]
    p.set_epoch(1)  # the loop goes on with whole epochs
    assert sorted(_xs(p)) == list(range(N))


def test_set_epoch_with_another_epoch_discards_the_loaded_state(src: Any) -> None:
    state = _saved_after(src.shuffle(seed=1), 30)
    ref = src.shuffle(seed=1)
    ref.set_epoch(2)
    p = src.shuffle(seed=1)
    p.load_state_dict(state)
    p.set_epoch(2)
    assert _xs(p) == _xs(ref)


def test_a_state_saved_at_the_end_of_an_epoch_resumes_at_the_next(src: Any) -> None:
    p = src.shuffle(seed=1)
    assert len(_xs(p)) == N
    state = p.state_dict()
    assert state["epoch"] == 1 and state["cursor"] is None
    ref = src.shuffle(seed=1)
    ref.set_epoch(1)
    q = src.shuffle(seed=1)
    q.load_state_dict(state)
    q.set_epoch(1)
    assert _xs(q) == _xs(ref)


# --- torch checkpoints carry the pipeline's fingerprint ---------------------------------------


@pytest.fixture
def tds() -> Any:
    pytest.importorskip("torch")
    from dload_arrow.torch import as_iterable_dataset

    return as_iterable_dataset


def _torch_state(tds: Any, pipe: Pipeline, k: int) -> dict[str, Any]:
    ds = tds(pipe, to_tensors=False)
    it = iter(ds)
    for _ in range(k):
        next(it)
    return dict(ds.state_dict())


def test_a_torch_state_names_its_pipeline_and_another_seed_refuses_it(src: Any,
                                                                      tds: Any) -> None:
    state = _torch_state(tds, src.shuffle(seed=1), 50)
    assert state["pipeline"] == src.shuffle(seed=1).state_dict()["pipeline"]
    other = tds(src.shuffle(seed=7), to_tensors=False)
    with pytest.raises(ConfigError, match="saved from another pipeline"):
        other.load_state_dict(state)
    same = tds(src.shuffle(seed=1), to_tensors=False)
    same.load_state_dict(state)
    assert len(_xs(same)) == N - 50


def test_a_torch_state_from_another_dataset_version_is_refused(repo: Repository, src: Any,
                                                               tds: Any) -> None:
    v1 = src.version
    repo.append("src", [("extra", {"x": -1})], progress=False)
    state = _torch_state(tds, repo.dataset("src", v1).shuffle(seed=1), 50)
    latest = tds(repo.dataset("src").shuffle(seed=1), to_tensors=False)
    with pytest.raises(ConfigError, match=f"saved while reading src@{v1[:16]}"):
        latest.load_state_dict(state)


def test_a_torch_state_without_a_fingerprint_still_loads(src: Any, tds: Any) -> None:
    old = {"format": "dload.torch/1", "epoch": 0, "position": 50}  # saved before fingerprints
    ds = tds(src.shuffle(seed=1), to_tensors=False)
    ds.load_state_dict(old)
    ds.set_epoch(0)
    assert _xs(ds) == _xs(src.shuffle(seed=1))[50:]


def test_a_torch_state_resumes_with_another_world_size(src: Any, tds: Any) -> None:
    full = _xs(src.shuffle(seed=1))
    state = _torch_state(tds, src.shuffle(seed=1), 50)
    ranks = [tds(src.shuffle(seed=1), rank=r, world_size=2, to_tensors=False) for r in (0, 1)]
    for ds in ranks:
        ds.load_state_dict(state)
    got = [_xs(ds) for ds in ranks]
    assert sorted(got[0] + got[1]) == sorted(full[50:])


def test_a_stateful_dataloader_state_from_another_pipeline_is_refused(src: Any,
                                                                      tds: Any) -> None:
    theirs = src.shuffle(seed=7).state_dict()["pipeline"]
    worker = {"format": "dload.torch/1", "epoch": 0, "position": 0, "pipeline": theirs,
              "world_size": 1, "rank": 0, "num_workers": 2, "worker": 0, "yielded": 5,
              "done": False}
    loader_state = {"_snapshot": {"_worker_snapshots": {
        "worker_0": {"dataset_state": worker},
        "worker_1": {"dataset_state": {**worker, "worker": 1}},
    }}}
    ds = tds(src.shuffle(seed=1), to_tensors=False)
    with pytest.raises(ConfigError, match="another pipeline"):
        ds.load_state_dict(loader_state)
    tds(src.shuffle(seed=7), to_tensors=False).load_state_dict(loader_state)  # its own: loads
