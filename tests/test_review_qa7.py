"""Regressions found by reviewing QA pass 7's own fixes: each worked before them, or was left."""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import Repository, SchemaError


def test_floats_append_to_a_decimal_column_when_their_text_fits(repo: Repository) -> None:
    repo.commit("p", pa.table({"__key__": ["a"], "price": pa.array([Decimal("1.00")],
                                                                   pa.decimal128(12, 2))}),
                progress=False)
    prices = [863.18, 19.99, 0.29, 1234567.89, None]
    repo.append("p", pa.table({"__key__": [f"b{i}" for i in range(5)], "price": prices}),
                progress=False)
    got = repo.dataset("p").to_arrow().column("price").to_pylist()[1:]
    assert got == [None if p is None else Decimal(repr(p)) for p in prices]
    with pytest.raises(SchemaError, match=r"1\.255, would be stored as Decimal\('1\.25'\)"):
        repo.append("p", pa.table({"__key__": ["c"], "price": [1.255]}), progress=False)


def test_a_list_column_with_null_cells_from_polars_appends(repo: Repository) -> None:
    repo.commit("l", pa.table({"__key__": ["a"], "ids": pa.array([[1]], pa.list_(pa.int32()))}),
                progress=False)
    repo.append("l", pl.DataFrame({"__key__": ["b", "c", "d"], "ids": [[5, 6], None, [8, 9]]}),
                progress=False)
    assert repo.dataset("l").to_arrow().column("ids").to_pylist() == [[1], [5, 6], None, [8, 9]]
    behind = pa.ListArray.from_arrays(pa.array([0, 2, 4, 6], pa.int32()),
                                      pa.array([5, 6, 7, 8, 9, 10]), mask=pa.array(
                                          [False, True, False]))
    repo.append("l", pa.table({"__key__": ["e", "f", "g"], "ids": behind}), progress=False)
    assert repo.dataset("l").to_arrow().column("ids").to_pylist()[-3:] == [[5, 6], None,
                                                                           [9, 10]]


def test_numpy_bools_and_sys_maxsize_are_accepted() -> None:
    p = dl.from_iterable(list(range(10)))
    assert len(list(p.batch(4, drop_last=np.True_))) == 2
    assert len(list(p.take(sys.maxsize))) == 10 and list(p.skip(sys.maxsize)) == []
    assert len(list(p.repeat(sys.maxsize).take(25))) == 25
    with pytest.raises(TypeError, match="drop_last must be True or False"):
        p.batch(4, drop_last="no")  # type: ignore[arg-type]


def test_an_all_null_naive_time_column_appends_to_a_zoned_one(repo: Repository) -> None:
    zoned = pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us", "UTC"))
    repo.commit("t", pa.table({"__key__": ["a"], "t": zoned}), progress=False)
    repo.append("t", pd.DataFrame({"__key__": ["b"], "t": pd.Series([pd.NaT],
                                                                    dtype="datetime64[ns]")}),
                progress=False)
    assert repo.dataset("t").to_arrow().column("t").to_pylist()[1] is None


def test_pandas_nat_in_sample_dicts_is_a_missing_value(repo: Repository) -> None:
    repo.commit("d", [("a", {"t": dt.datetime(2024, 1, 1)}), ("b", {"t": pd.NaT})],
                progress=False)
    assert [s["t"] for s in repo.dataset("d").samples()] == [dt.datetime(2024, 1, 1), None]


def test_a_derived_filter_keeps_the_stored_types(repo: Repository) -> None:
    t = pa.table({"__key__": ["a", "b"], "x": pa.array([1, 2], pa.int8())})
    repo.commit("src", t, progress=False)
    repo.derive("f", repo.dataset("src").pipeline().filter(lambda s: s["x"] > 1))
    assert repo.dataset("f").schema.field("x").type == pa.int8()


def test_paths_are_fingerprinted_by_value_on_every_python(monkeypatch: Any) -> None:
    class Local(PurePosixPath):  # as Python 3.13 names its path classes: pathlib._local
        pass

    monkeypatch.setattr(Local, "__module__", "pathlib._local")
    a = dl.from_iterable([{"p": Local("a")}]).fingerprint()
    assert a != dl.from_iterable([{"p": Local("b")}]).fingerprint()


def test_two_key_columns_are_refused_naming_them(repo: Repository) -> None:
    k = pa.array(["a", "b"])
    table = pa.Table.from_arrays([k, k, pa.array([1, 2])], names=["__key__", "__key__", "x"])
    with pytest.raises(SchemaError, match="__key__"):
        repo.commit("d", table, progress=False)


def test_random_stream_of_wide_items_has_its_own_fingerprint() -> None:
    assert "rows" not in repr(dl.random_stream(0, size=256))
    wide = dl.random_stream(0, size=257)
    assert "rows=" in repr(wide)
    assert wide.fingerprint() != dl.random_stream(0, size=256).fingerprint()
