"""QA review66d, a review of this session's last fixes: versions() put a version latest had
moved back to (a commit of old data again) behind the one it replaced, and a crashed commit's
manifest first for good; a commit's chunk counted lists of parts 8 bytes each; pd.NA in a
namedtuple was a raw TypeError; a pandas frame neither Arrow nor pandas hashes was
fingerprinted by type; a flat frame got "store a wider type"; a dataset another user keeps
private was said to be missing, with rm advice."""

from __future__ import annotations

import collections
import errno
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.pipeline.fingerprint import function_identity
from dload_arrow.storage.local import LocalStorage
from dload_arrow.store.frames import held_bytes


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))


def test_versions_follow_latest_and_a_crashed_commit_keeps_its_age(
        repo: dl.Repository, tmp_path: Path) -> None:
    a = repo.commit("x", [("k", {"v": 1})])
    time.sleep(0.02)
    b = repo.commit("x", [("k", {"v": 2})])
    time.sleep(0.02)
    assert repo.commit("x", [("k", {"v": 1})]).version == a.version  # latest back to a
    assert [v.version for v in repo.versions("x")] == [a.version, b.version]
    manifests = tmp_path / "r" / "datasets" / "x" / "manifests"
    crashed = manifests / ("0" * 64 + ".arrow")  # a manifest no ref ever named, a day old
    crashed.write_bytes((manifests / f"{b.version}.arrow").read_bytes())
    os.utime(crashed, (time.time() - 86400, time.time() - 86400))
    order = [v.version for v in dl.Repository.open(
        str(tmp_path / "r"), cache_dir=str(tmp_path / "c2"))._stored_versions("x")[0]]
    assert order[:2] == [a.version, b.version]


def test_a_chunk_counts_nested_parts() -> None:
    parts = {"parts": [b"x" * 1000] * 10, "meta": {"raw": bytearray(500)}, "tokens": [1] * 100}
    assert 10_500 <= held_bytes(parts) <= 12_000
    assert held_bytes({"parts": [None, b"x" * 10_000]}) >= 10_000  # (QA review66e)


def test_pandas_na_in_a_namedtuple_is_a_null(repo: dl.Repository) -> None:
    point = collections.namedtuple("point", "x y")
    repo.commit("p", [("a", {"v": point(pd.NA, 1)})],
                schema=pa.schema([("v", pa.struct([("x", pa.int64()), ("y", pa.int64())]))]))
    assert repo.dataset("p").to_arrow().column("v").to_pylist() == [{"x": None, "y": 1}]


def test_a_frame_pandas_cannot_hash_is_fingerprinted_stably() -> None:
    def make(frame: Any) -> Any:
        def keep(r: dict[str, Any]) -> bool:
            return frame is not None
        return keep

    a = pd.DataFrame({"k": [[1, 2], 3]})  # (neither Arrow nor pandas hashes it: by type,
    b = pd.DataFrame({"k": [[1, 2], 4]})  # as a pickle is not stable across processes)
    assert function_identity(make(a)) == function_identity(make(b))
    assert function_identity(make(a)) == function_identity(make(a.copy()))


def test_a_flat_frame_for_an_episode_is_named(repo: dl.Repository) -> None:
    schema = pa.schema([("obs", pa.list_(pa.list_(pa.uint8(), 4)))])
    with pytest.raises(dl.SchemaError, match=r"is a flat array of 4 values, but the column "
                       r"holds frames of shape \(4,\): give a \(frames, 4\) array"):
        repo.commit("e", [("a", {"obs": np.zeros(4, np.uint8)})], schema=schema)


def test_a_dataset_another_user_keeps_private_is_said_so(
        repo: dl.Repository, tmp_path: Path) -> None:
    repo.commit("pub", [("k", {"v": 1})])
    storage = repo.storage
    assert isinstance(storage, LocalStorage)
    private = tmp_path / "r" / "datasets" / "priv"
    private.mkdir()
    with pytest.warns(UserWarning, match="cannot be read by this user"):
        storage._unlisted(PermissionError(errno.EACCES, "Permission denied", str(private)))
    with pytest.raises(dl.NotFoundError, match=r"'datasets/priv' under .* cannot be read by "
                       r"this user, so the versions of 'priv' cannot be told") as e:
        repo.versions("priv")
    assert "rm" not in str(e.value) and "Create it" not in str(e.value)
