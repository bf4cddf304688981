"""QA review66b, a review of this session's first fixes: nested times beside numbers were
left unchecked and truncated, numpy's uint64 2**64-1 was stored as -1.0 in a float column,
pandas' NA inside lists was refused with pyarrow's words, a user's folder beside a root's own
folders was refused, and a cache was refused with advice to `dload ls` it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl

_S = dt.timedelta(seconds=1.5)


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))


@pytest.mark.parametrize(("typ", "value"), [
    (pa.struct([("d", pa.duration("s")), ("n", pa.int64())]), {"d": _S, "n": 5}),
    (pa.map_(pa.int64(), pa.duration("s")), [(1, _S)]),
    (pa.list_(pa.duration("us")), [pd.Timedelta(1500, "ns")]),
    (pa.list_(pa.time32("ms")), [dt.time(1, 2, 3, 5)]),
])
def test_nested_times_beside_numbers_are_never_truncated(
        repo: dl.Repository, typ: pa.DataType, value: Any) -> None:
    with pytest.raises(dl.SchemaError, match="finer than"):
        repo.commit("t", [("a", {"v": value})], schema=pa.schema([("v", typ)]))
    whole = {"d": dt.timedelta(seconds=2), "n": 5} if pa.types.is_struct(typ) else None
    if whole is not None:
        repo.commit("w", [("a", {"v": whole}), ("b", {"v": {"d": 3, "n": 1}})],
                    schema=pa.schema([("v", typ)]))  # (an int: a count of seconds)
        assert [s["v"] for s in repo.dataset("w").samples()] == [
            whole, {"d": dt.timedelta(seconds=3), "n": 1}]


def test_a_ns_timedelta_beside_one_past_292_years_is_refused(repo: dl.Repository) -> None:
    with pytest.raises(dl.SchemaError, match=r"sample 'a', column 'gap'.*finer"):
        repo.commit("g", [("a", {"gap": pd.Timedelta(999, "ns")}),
                          ("b", {"gap": dt.timedelta(days=200_000)})])


@pytest.mark.parametrize("t", [pa.float32(), pa.float64()])
def test_an_int_a_float_column_cannot_hold_is_refused_never_stored_as_another(
        repo: dl.Repository, t: pa.DataType) -> None:
    with pytest.raises(dl.SchemaError, match=r"is an int that float.. cannot hold exactly"):
        repo.commit("u", [("a", {"v": np.uint64(2**64 - 1)})], schema=pa.schema([("v", t)]))
    big = 24 if t == pa.float32() else 53  # (pyarrow takes ints up to the mantissa only)
    repo.commit("u", [("a", {"v": np.uint64(2**20)}), ("b", {"v": 3}), ("c", {"v": 0.5}),
                      ("d", {"v": 2**big})], schema=pa.schema([("v", t)]))
    assert repo.dataset("u").to_arrow().column("v").to_pylist() == [2.0**20, 3.0, 0.5,
                                                                    2.0**big]


def test_pandas_na_inside_lists_is_a_null_or_named(repo: dl.Repository) -> None:
    repo.commit("m", [("a", {"v": [1, pd.NA]})],
                schema=pa.schema([("v", pa.list_(pa.int64()))]))
    assert repo.dataset("m").to_arrow().column("v").to_pylist() == [[1, None]]
    with pytest.raises(dl.SchemaError, match=r"holds pandas' NA.*give None there, or pass "
                       r"schema="):
        repo.commit("l", [("a", {"v": [1, pd.NA]})])


def test_a_users_folder_beside_a_roots_own_folders_is_theirs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    photos = data / "raw" / "photos"
    photos.mkdir(parents=True)
    (photos / "a.txt").write_text("hi")
    first = dl.Repository.open(str(data), cache_dir=str(tmp_path / "c"))
    first.commit("first", [("k", {"x": 1})])
    first.dataset("first").to_arrow()
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "other"), "--cache-dir",
                                 str(tmp_path / "c2")])
    run("commit", "photos", "--from", str(photos))
    err = run("commit", "q", "--from", str(data / "datasets" / "first"), rc=1).err
    assert "a dload root: its files are manifests" in err
    cache = tmp_path / "c"
    err = run("commit", "q", "--from", str(cache), rc=1).err
    assert "a dload cache: its files are copies of shards" in err and "ls --root" not in err
