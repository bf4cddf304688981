"""where() on dictionary (Categorical) columns, float16 columns and zoned time columns (QA4)."""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from dload_arrow import Repository
from dload_arrow.catalog.filtering import compile_filter
from dload_arrow.catalog.predicate import PredicateError
from dload_arrow.rowfilter import filter_rows

SPLITS = ["train", "val", "train", None, "test", "val", "train", "zoo"]
NS = [3, 1, 2, 3, None, 7, 3, 5]

# condition -> the keys of SPLITS that pass (SQL NULL rules: a null split passes nothing
# but IS NULL)
_SPLIT_CASES = {
    "split = 'train'": [0, 2, 6],
    "split != 'train'": [1, 4, 5, 7],
    "split < 'train'": [4],
    "split >= 'val'": [1, 5, 7],
    "split IN ('val', 'test')": [1, 4, 5],
    "split NOT IN ('val', 'test')": [0, 2, 6, 7],
    "split BETWEEN 'tea' AND 'tz'": [0, 2, 4, 6],
    "NOT (split = 'val')": [0, 2, 4, 6, 7],
    "split IS NULL": [3],
    "split = 'nope'": [],
    "'val' = split": [1, 5],
}


def _keys(table: pa.Table) -> list[int]:
    return [int(k[1:]) for k in table.column("__key__").to_pylist()]


def _table(split: pa.Array, n: bool = False) -> pa.Table:
    t = pa.table({"__key__": [f"k{i}" for i in range(len(SPLITS))], "split": split})
    return t.append_column("n", pa.array(NS, pa.int64()).dictionary_encode()) if n else t


@pytest.mark.parametrize("condition", sorted(_SPLIT_CASES))
def test_dictionary_columns_filter_by_their_values(repo: Repository, condition: str) -> None:
    keys = [f"k{i}" for i in range(len(SPLITS))]
    repo.commit("pd", pd.DataFrame({"__key__": keys, "split": pd.Categorical(SPLITS)}),
                progress=False)
    repo.commit("pl", pl.DataFrame({"__key__": keys,
                                    "split": pl.Series(SPLITS, dtype=pl.Categorical)}),
                progress=False)
    repo.commit("pa", _table(pa.array(SPLITS).dictionary_encode()), progress=False)
    want = _SPLIT_CASES[condition]
    for name in ("pd", "pl", "pa"):
        ds = repo.dataset(name)
        assert pa.types.is_dictionary(ds.schema.field("split").type)
        view = ds.where(condition)
        assert _keys(view.to_arrow()) == want, name
        assert sorted(_keys(view.to_polars().collect().to_arrow())) == want, name
        assert view.num_rows == len(want)


def test_dictionary_of_integers_takes_integer_literals() -> None:
    # (in memory: a committed integer dictionary column does not read back yet)
    table = _table(pa.array(SPLITS).dictionary_encode(), n=True)
    for condition, want in [("n = 3", [0, 3, 6]), ("n > 2.5 AND split = 'train'", [0, 6]),
                            ("n IN (1, 7)", [1, 5]), ("n < 99999999999", [0, 1, 2, 3, 5, 6, 7])]:
        f = compile_filter(condition, table.schema).row_filter
        assert _keys(filter_rows(table, f)) == want
        assert filter_rows(table, f).equals(table.filter(f.expression))
    with pytest.raises(PredicateError, match=r"column 'n' is dictionary.*cannot be compared"):
        compile_filter("n = 'three'", table.schema)


def test_dictionary_masks_match_the_arrow_expression_across_chunks() -> None:
    # each chunk of a column has its own dictionary
    parts = [_table(pa.array(SPLITS).dictionary_encode(), n=True),
             _table(pa.array(list(reversed(SPLITS))).dictionary_encode(), n=True)]
    table = pa.concat_tables(parts)
    assert table.column("split").num_chunks == 2
    f = compile_filter("split >= 'train' AND n IN (3, 7)", table.schema).row_filter
    f = pickle.loads(pickle.dumps(f))
    got = filter_rows(table, f)
    assert got.equals(table.filter(f.expression))
    assert got.column("split").to_pylist() == ["train", "val", "train", "zoo", "train", "val"]


def test_float16_columns_compare_and_describe(repo: Repository) -> None:
    scores = pa.array(np.array([0.5, 1.5, 2.5, 1.0], np.float16)).to_pylist()
    table = pa.table({"__key__": ["a", "b", "c", "d", "e"],
                      "score": pa.array([*scores, None], pa.float16())})
    repo.commit("h", table, progress=False)
    ds = repo.dataset("h")
    assert ds.where("score > 1").to_arrow().column("__key__").to_pylist() == ["b", "c"]
    assert ds.where("score >= 1.0").to_arrow().column("__key__").to_pylist() == ["b", "c", "d"]
    assert ds.where("score = 1.5 OR score IS NULL").to_arrow().column(
        "__key__").to_pylist() == ["b", "e"]
    assert ds.where("score < 0.75").pruning["units_read"] == 1
    f = compile_filter("score BETWEEN 0.6 AND 2", table.schema).row_filter
    assert filter_rows(table, f).equals(table.filter(f.expression))
    rows = {r["column"]: r for r in ds.where("score IS NOT NULL").describe().to_pylist()}
    score = rows["score"]
    assert (score["count"], score["nulls"], score["min"], score["max"], score["mean"]) == (
        4, 0, "0.5", "2.5", 1.375)
    exact = {r["column"]: r for r in ds.describe(exact=True).to_pylist()}["score"]
    assert (exact["count"], exact["nulls"], exact["mean"]) == (4, 1, 1.375)


def _when(repo: Repository, zone: str | None) -> Any:
    times = pd.to_datetime(["2024-01-01 10:00", "2024-01-21 00:00", "2024-02-01 10:00"])
    if zone is not None:
        times = times.tz_localize(zone)
    repo.commit("e", pd.DataFrame({"__key__": ["a", "b", "c"], "when": times}), progress=False)
    return repo.dataset("e")


@pytest.mark.parametrize("condition, want", [
    ("when >= '2024-01-21'", ["b", "c"]),  # zoneless: UTC
    ("when < '2024-01-21 00:00:00'", ["a"]),
    ("when = '2024-01-21T00:00:00'", ["b"]),
    ("when >= '2024-01-21T00:00:00Z'", ["b", "c"]),
    ("when > '2024-01-21T00:00:00+01:00'", ["b", "c"]),  # the instant 23:00 UTC on the 20th
    ("when BETWEEN '2024-01-01' AND '2024-01-31'", ["a", "b"]),
])
def test_zoneless_literals_are_utc_against_a_utc_column(
        repo: Repository, condition: str, want: list[str]) -> None:
    view = _when(repo, "UTC").where(condition)
    assert view.to_arrow().column("__key__").to_pylist() == want
    assert sorted(view.to_polars().collect()["__key__"].to_list()) == want


def test_zoneless_literals_are_utc_against_another_zone(repo: Repository) -> None:
    ds = _when(repo, "Europe/Paris")  # b is 2024-01-20T23:00:00Z
    assert ds.where("when >= '2024-01-21'").to_arrow().column("__key__").to_pylist() == ["c"]
    assert ds.where("when >= '2024-01-20T23:00'").to_arrow().column(
        "__key__").to_pylist() == ["b", "c"]
    assert ds.where("when = '2024-01-21T00:00:00+01:00'").to_arrow().column(
        "__key__").to_pylist() == ["b"]
    lit = compile_filter("when < '2024-01-21'", ds.schema).node.right.value  # type: ignore
    assert lit == dt.datetime(2024, 1, 21, tzinfo=dt.UTC)


def test_zoned_literals_against_a_zoneless_column_keep_their_rules(repo: Repository) -> None:
    ds = _when(repo, None)
    assert ds.where("when >= '2024-01-21T00:00:00Z'").to_arrow().column(
        "__key__").to_pylist() == ["b", "c"]
    with pytest.raises(PredicateError, match=r"zone offset \+02:00.*'2024-01-20T22:00:00'"):
        ds.where("when >= '2024-01-21T00:00:00+02:00'")


def test_a_time_literal_that_does_not_parse_names_the_column_and_the_fix(
        repo: Repository) -> None:
    ds = _when(repo, "UTC")
    with pytest.raises(PredicateError, match=r"'soon' is not a timestamp.*column 'when'.*"
                                             r"write an ISO time, e.g. '2024-01-21'"):
        ds.where("when > 'soon'")


@pytest.mark.parametrize("condition", ["x > 1", "x >= 0", "x < 1", "x != 2", "x = 2",
                                       "x between 0 and 3", "not x > 1", "x in (2.0, 0.5)"])
def test_nan_rows_match_the_same_conditions_in_arrow_and_polars(
        repo: Repository, condition: str) -> None:
    """NaN is unequal to everything (IEEE, as the row filter compares); polars alone would put
    it above every number and keep it for ``x > 1``."""
    repo.commit("nan", pa.table({"x": [0.5, float("nan"), 2.0, None]}), progress=False)
    view = repo.dataset("nan").where(condition)
    arrow = view.to_arrow().column("__key__").to_pylist()
    assert view.to_polars().collect()["__key__"].to_list() == arrow
    assert [s["__key__"] for s in view.samples()] == arrow
