"""``pipe.bucket(size)``: length bucketing (QA finetune61: no bucketing, padded batches of a
2-token row beside a 900-token one)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dload_arrow as dl
from dload_arrow.errors import ConfigError, SchemaError

TOKENS = pa.schema([("tokens", pa.list_(pa.int32()))])


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dl.Repository:
    r = dl.Repository.open(tmp_path_factory.mktemp("bucket") / "root")
    lengths = np.random.default_rng(0).integers(1, 500, 1000)
    r.commit("docs", [(f"d{i:04d}", {"tokens": [int(i)] * int(n)})
                      for i, n in enumerate(lengths)], schema=TOKENS, progress=False)
    return r


def _padding(batches: list[dict[str, np.ndarray]]) -> float:
    """The share of padded positions."""
    lengths = [b["tokens_length"] for b in batches]
    return 1 - sum(int(n.sum()) for n in lengths) / sum(len(n) * int(n.max()) for n in lengths)


def test_batches_after_bucket_pad_little_and_hold_every_row_once(repo: dl.Repository) -> None:
    ds = repo.dataset("docs")
    plain = list(ds.shuffle(seed=0).batch(16, collate=dl.pad_collate()))
    bucketed = list(ds.shuffle(seed=0).bucket(16).batch(16, collate=dl.pad_collate()))
    keys = [k for b in bucketed for k in b["__key__"]]
    assert sorted(keys) == sorted(k for b in plain for k in b["__key__"])
    assert len(keys) == len(set(keys)) == 1000
    assert _padding(bucketed) < 0.1 < _padding(plain)
    spans = [int(b["tokens_length"].max() - b["tokens_length"].min()) for b in bucketed]
    assert max(spans[:-1]) < 100  # within one window's sorted groups
    firsts = [int(b["tokens_length"].min()) for b in bucketed[:20]]
    assert firsts != sorted(firsts)  # groups come out shuffled, not short to long
    again = list(ds.shuffle(seed=0).bucket(16).batch(16, collate=dl.pad_collate()))
    assert [list(b["__key__"]) for b in again] == [list(b["__key__"]) for b in bucketed]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(1, 8), windows=st.integers(1, 4), cut=st.integers(0, 400),
       seed=st.integers(0, 3))
def test_a_resume_anywhere_continues_exactly(repo: dl.Repository, size: int, windows: int,
                                             cut: int, seed: int) -> None:
    def pipe() -> dl.Pipeline:
        return repo.dataset("docs").pipeline().take(300).bucket(
            size, window=size * windows, seed=seed)

    full = [x["__key__"] for x in pipe()]
    assert sorted(full) == sorted(x["__key__"] for x in repo.dataset("docs").pipeline().take(300))
    it = iter(pipe())
    got = [next(it)["__key__"] for _ in range(min(cut, len(full)))]
    resumed = pipe()
    resumed.load_state_dict(json.loads(json.dumps(it.state_dict())))
    assert got + [x["__key__"] for x in resumed] == full


def test_epochs_differ_and_workers_see_each_row_once(repo: dl.Repository) -> None:
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset

    pipe = repo.dataset("docs").pipeline().bucket(8, window=64).batch(8)
    first = [list(b["__key__"]) for b in pipe]
    pipe.set_epoch(1)
    assert [list(b["__key__"]) for b in pipe] != first
    loader = StatefulLoader(as_iterable_dataset(
        repo.dataset("docs").pipeline().bucket(8, window=64).batch(8)), num_workers=2)
    keys = [k for b in loader for k in b["__key__"]]
    assert len(keys) == len(set(keys)) == 1000


def test_bad_arguments_are_refused(repo: dl.Repository) -> None:
    ds = repo.dataset("docs")
    with pytest.raises(ConfigError, match=r"window must be a multiple of the batch size \(e.g"):
        ds.pipeline().bucket(16, window=100)
    with pytest.raises(SchemaError, match="the rows have no such column"):
        ds.pipeline().bucket(16, column="input_ids")
    with pytest.raises(SchemaError, match="an item has no column 'tokens'"):
        list(dl.from_iterable([{"x": 1}]).bucket(2))
    with pytest.raises(SchemaError, match="which has no length"):
        list(dl.from_iterable([{"tokens": 3}]).bucket(2))
    for bad in ({"size": 0}, {"size": 4, "window": 0}, {"size": 4, "seed": "x"}):
        with pytest.raises((ConfigError, TypeError, ValueError)):
            ds.pipeline().bucket(**bad)  # type: ignore[arg-type]
