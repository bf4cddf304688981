"""QA continual61: a resume never continues an epoch on another dataset version, strict=False
included (52 rows twice and 35 never, silently); gc's words about its grace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dload_arrow as dl
from dload_arrow.errors import ConfigError


def _rows(a: int, b: int) -> list[tuple[str, dict[str, int]]]:
    return [(f"k{i:05d}", {"x": i}) for i in range(a, b)]


@pytest.fixture()
def repo(tmp_path: Path) -> dl.Repository:
    r = dl.Repository.open(tmp_path / "root")
    r.commit("d", _rows(0, 400), shard_size="4KiB", progress=False)
    return r


def test_a_pipeline_state_names_its_versions_and_refuses_another(repo: dl.Repository) -> None:
    v1 = repo.dataset("d").version
    it = iter(repo.dataset("d").shuffle(seed=0).map(lambda r: r))
    for _ in range(50):
        next(it)
    state = json.loads(json.dumps(it.state_dict()))
    assert state["datasets"] == [f"d@{v1[:16]}"]
    repo.append("d", _rows(400, 500), progress=False)
    for strict in (True, False):
        again = repo.dataset("d").shuffle(seed=0).map(lambda r: r)
        with pytest.raises(ConfigError, match=rf"saved while reading d@{v1[:16]} .*"
                                              rf"repo.dataset\('d', '{v1[:16]}'\)"):
            again.load_state_dict(state, strict=strict)
    same = repo.dataset("d", v1).shuffle(seed=0).map(lambda r: {**r})  # a fixed function
    same.load_state_dict(state, strict=False)
    keys = [x["__key__"] for x in same]
    assert len(keys) == 350 and all(k < "k00400" for k in keys)


def test_a_torch_state_does_too_through_workers(repo: dl.Repository) -> None:
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset

    v1 = repo.dataset("d").version
    loader = StatefulLoader(as_iterable_dataset(repo.dataset("d").shuffle(seed=0).batch(16)),
                            num_workers=2)
    for i, _ in enumerate(loader):
        if i == 5:
            break
    state = json.loads(json.dumps(loader.state_dict()))
    repo.append("d", _rows(400, 500), progress=False)
    moved = as_iterable_dataset(repo.dataset("d").shuffle(seed=0).batch(16))
    for strict in (True, False):
        with pytest.raises(ConfigError, match=f"saved while reading d@{v1[:16]}"):
            moved.load_state_dict(state, strict=strict)
    kept = as_iterable_dataset(repo.dataset("d", v1).shuffle(seed=0).batch(16))
    kept.load_state_dict(state)
    assert all(k < "k00400" for b in StatefulLoader(kept) for k in b["__key__"])


def test_states_saved_before_versions_were_recorded_still_load(repo: dl.Repository) -> None:
    pipe = repo.dataset("d").pipeline()
    it = iter(pipe)
    next(it)
    state = it.state_dict()
    del state["datasets"]
    again = repo.dataset("d").pipeline()
    again.load_state_dict(state)
    assert len(list(again)) == 399


def test_gc_says_what_its_grace_keeps(tmp_path: Path, repo: dl.Repository) -> None:
    from test_cli import dload

    v1 = repo.dataset("d").version
    repo.commit("d", _rows(1000, 1100), progress=False)
    root = str(repo.storage.root)
    dload("rm", "d", "--version", v1[:12], "--yes", "--root", root, cwd=tmp_path)
    out = dload("gc", "--root", root, cwd=tmp_path).out
    assert "jobs still reading a version rm removed" in out
    assert "jobs reading a version rm removed" in dload("gc", "--help", cwd=tmp_path).out


def test_review61c_states_through_to_device_two_versions_and_epoch_ends(
        repo: dl.Repository) -> None:
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device

    v1 = repo.dataset("d").version
    batches = to_device(StatefulLoader(as_iterable_dataset(
        repo.dataset("d").shuffle(seed=0).batch(16))), "cpu")
    for i, _ in enumerate(batches):
        if i == 3:
            break
    state = json.loads(json.dumps(batches.state_dict()))
    assert state["datasets"] == [f"d@{v1[:16]}"]
    repo.append("d", _rows(400, 450), progress=False)
    moved = as_iterable_dataset(repo.dataset("d").shuffle(seed=0).batch(16))
    with pytest.raises(ConfigError, match="saved while reading"):
        moved.load_state_dict(state, strict=False)
    # one dataset read at two versions: its own state loads
    both = dl.concat([repo.dataset("d", v1).pipeline(), repo.dataset("d").pipeline()])
    it = iter(both)
    next(it)
    again = dl.concat([repo.dataset("d", v1).pipeline(), repo.dataset("d").pipeline()])
    again.load_state_dict(json.loads(json.dumps(it.state_dict())))
    assert len(list(again)) == 400 + 450 - 1
    # a state saved at an epoch's end resumes nothing: the next epoch may read a new version
    whole = repo.dataset("d", v1).pipeline()
    list(whole)
    ended = whole.state_dict()
    assert ended["cursor"] is None and ended["epoch"] == 1
    latest = repo.dataset("d").pipeline()
    latest.load_state_dict(ended, strict=False)
    assert len(list(latest)) == 450


def test_a_bucket_window_with_a_bad_item_stays_to_read(repo: dl.Repository) -> None:
    from dload_arrow.errors import SchemaError

    pipe = dl.from_iterable([{"tokens": [1] * (i % 5 + 1)} for i in range(6)] + [{"tokens": 3}]
                            ).bucket(2, window=4)
    it = iter(pipe)
    got = [next(it) for _ in range(4)]
    with pytest.raises(SchemaError, match="which has no length"):
        next(it)
    state = it.state_dict()
    with pytest.raises(SchemaError, match="which has no length"):  # read again, not lost
        next(it)
    assert len(got) == 4 and state["cursor"] is not None


def test_a_statefuldataloader_state_at_an_epoch_end_loads_after_an_append(
        repo: dl.Repository) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader")
    from dload_arrow.torch import as_iterable_dataset

    loader = sdl.StatefulDataLoader(as_iterable_dataset(repo.dataset("d").pipeline()),
                                    batch_size=None, num_workers=2)
    assert len(list(loader)) == 400
    state = loader.state_dict()
    repo.append("d", _rows(400, 450), progress=False)
    again = as_iterable_dataset(repo.dataset("d").pipeline())
    again.load_state_dict(state, strict=False)  # the epoch is over: the next reads 450
    assert len(list(sdl.StatefulDataLoader(again, batch_size=None, num_workers=2))) == 450


def test_pad_collate_as_a_collate_fn_keeps_frames_float32_and_refuses_other_devices() -> None:
    import torch

    rows = [{"f": [torch.ones(3, dtype=torch.float32)] * (i + 1)} for i in range(2)]
    out = dl.pad_collate()(rows)
    assert out["f"].dtype == torch.float32 and out["f"].shape == (2, 2, 3)
    mixed = dl.pad_collate()([{"t": np.asarray([1, 2], np.int32)},
                              {"t": torch.tensor([3], dtype=torch.int32)}])
    assert isinstance(mixed["t"], torch.Tensor)
    with pytest.raises(ConfigError, match=r"holds a torch\.float32 tensor on meta; collate"):
        dl.pad_collate()([{"t": torch.ones(2, device="meta")}])
    bf16 = [{"t": torch.ones(2, dtype=torch.bfloat16)}, {"t": torch.ones(1, dtype=torch.bfloat16)}]
    with pytest.raises(ConfigError, match=r"column 't' holds a torch\.bfloat16 tensor"):
        dl.pad_collate()(bf16)
    ragged = dl.pad_collate()([{"f": [torch.ones(2), torch.ones(2)]}, {"f": [torch.ones(3)]}])
    assert all(isinstance(t, torch.Tensor) for row in ragged["f"] for t in row)  # lists kept


@pytest.mark.parametrize("workers", [1, 2])
def test_a_loader_state_older_than_its_workers_snapshots_is_still_checked(
        repo: dl.Repository, workers: int) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader")
    from dload_arrow.torch import as_iterable_dataset

    loader = sdl.StatefulDataLoader(as_iterable_dataset(repo.dataset("d").shuffle(seed=0)),
                                    batch_size=None, num_workers=workers,
                                    snapshot_every_n_steps=1000)  # no worker snapshot yet
    for i, _ in enumerate(loader):
        if i == 49:
            break
    state = json.loads(json.dumps(loader.state_dict()))
    repo.append("d", _rows(400, 450), progress=False)
    with pytest.raises(ConfigError, match="saved while reading"):
        as_iterable_dataset(repo.dataset("d").shuffle(seed=0)).load_state_dict(state,
                                                                              strict=False)
