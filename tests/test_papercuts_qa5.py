"""QA pass 5: inputs that used to fail late, or with a raw Python error."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, Repository, SchemaError, StorageError
from dload_arrow.sizes import parse_duration
from dload_arrow.stats import shuffle_quality


def test_durations_take_timedeltas_and_words(repo: Repository) -> None:
    assert parse_duration(datetime.timedelta(hours=1)) == parse_duration("1 hour") == 3600
    assert parse_duration("30 mins") == parse_duration("30m") == 1800
    assert parse_duration("1.5 days") == 1.5 * 86400
    with pytest.raises(ConfigError, match="timedelta"):
        parse_duration("1 fortnight")
    with pytest.raises(ConfigError):
        parse_duration(datetime.timedelta(seconds=-1))
    assert repo.gc(grace=datetime.timedelta(hours=1)).deleted == []


def test_a_schema_that_is_not_a_pyarrow_schema_is_refused(repo: Repository) -> None:
    with pytest.raises(SchemaError, match=r"pa\.schema"):
        repo.commit("d", [("a", {"x": 1})], schema={"x": "int64"},  # type: ignore[arg-type]
                    progress=False)


@pytest.mark.parametrize(("url", "match"), [("s3://", "names no bucket"),
                                             ("foo://x", "not a storage")])
def test_roots_that_cannot_be_storage_are_refused_when_opened(url: str, match: str,
                                                              tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=match):
        Repository.open(url, cache_dir=tmp_path / "c")


def test_a_local_root_under_a_file_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    repo = Repository.open(tmp_path / "file" / "root", cache_dir=tmp_path / "c")
    with pytest.raises(StorageError, match="point the root at a directory you can write"):
        repo.commit("d", [("a", {"x": 1})], progress=False)


@pytest.mark.parametrize("order", [[0, 0, 1], [1, 2, 3], [0.5, 1.5], [[0, 1], [1, 0]]])
def test_shuffle_quality_refuses_what_is_not_a_permutation(order: Any) -> None:
    with pytest.raises(ValueError, match="shuffle_quality needs"):
        shuffle_quality(np.asarray(order))
    assert shuffle_quality(np.array([2, 0]), n=5).displacement.value >= 0  # a prefix is fine


def test_a_cursor_that_does_not_fit_the_pipeline_is_a_clear_error() -> None:
    pipe = dl.from_iterable(list(range(10))).shuffle(4, seed=1)
    pipe.load_state_dict({"epoch": 0, "cursor": {"foo": 1}})
    with pytest.raises(ValueError, match="does not fit this pipeline"):
        list(pipe)
    assert sorted(pipe) == list(range(10))  # and the pipeline still works afterwards


def test_an_empty_table_with_a_schema_says_it_is_empty(repo: Repository) -> None:
    empty = pa.table({"x": pa.array([], pa.int64())})
    with pytest.raises(SchemaError, match="empty"):
        repo.commit("d", empty, progress=False)


def test_describe_from_statistics_is_refused_on_a_filtered_view(repo: Repository) -> None:
    repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(50)], progress=False)
    view = repo.dataset("d").where("x >= 40")
    with pytest.raises(ValueError, match="whole row groups"):
        view.describe(exact=False)
    x = {r["column"]: r for r in view.describe().to_pylist()}["x"]
    assert (x["count"], x["min"]) == (10, "40") or (x["count"], float(x["min"])) == (10, 40.0)


def test_a_shard_size_under_the_row_group_size_is_honoured(repo: Repository) -> None:
    rng = np.random.default_rng(0)
    rows = [(f"k{i:04d}", {"blob": rng.bytes(140)}) for i in range(500)]  # 70 KB, incompressible
    v = repo.commit("d", rows, shard_size="16KB", progress=False)  # default row groups: 2 MiB
    assert v.shards_total >= 3
    assert max(s.bytes for s in repo.manifest("d").shards) < 3 * 16_000


@pytest.mark.parametrize(("meta", "match"), [({1: "a"}, "keys must be str"),
                                              ({"a": [{2: 0}]}, "keys must be str"),
                                              ({"a": float("nan")}, "finite numbers")])
def test_meta_that_would_not_read_back_is_refused(repo: Repository, meta: Any,
                                                  match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        repo.commit("d", [("a", {"x": 1})], meta=meta, progress=False)
    assert repo.commit("d", [("a", {"x": 1})], meta={"shape": (8, 8)},
                       progress=False).manifest.meta == {"shape": [8, 8]}
