"""Catalog findings of the third QA pass: SQL errors quoting the rewrite, ISO times with a
zone against a naive column, describe() without counts for non-scalar columns."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import PredicateError, Repository, SqlError


def test_a_sql_error_quotes_the_users_query_not_the_rewrite(repo: Repository) -> None:
    repo.commit("t", [("a", {"x": 1})], progress=False)
    with pytest.raises(SqlError) as e:
        repo.sql("select when from samples('t')")
    text = str(e.value)
    assert "syntax error" in text and "samples('t')" in text
    assert "__dload_samples" not in text and "read_parquet" not in text


def test_where_reads_a_utc_iso_time_against_a_naive_column(repo: Repository) -> None:
    when = pa.array([dt.datetime(2024, 1, 1), dt.datetime(2024, 2, 1)], pa.timestamp("us"))
    repo.commit("t", pa.table({"__key__": ["a", "b"], "when": when}), progress=False)
    ds = repo.dataset("t")
    for text in ("2024-01-21T00:00:00Z", "2024-01-21 00:00:00+00:00", "2024-01-21T00:00Z"):
        assert ds.where(f"when > '{text}'").to_arrow()["__key__"].to_pylist() == ["b"]
    with pytest.raises(PredicateError, match=r"\+02:00.*in UTC.*'2024-01-21T03:00:00'"):
        ds.where("when > '2024-01-21T05:00:00+02:00'")


def test_describe_counts_nulls_of_binary_tensor_and_list_columns(repo: Repository) -> None:
    rows = []
    for i in range(10):
        rows.append((f"k{i}", {
            "blob": None if i % 3 == 0 else b"x" * i,
            "vec": None if i % 4 == 0 else np.full((2, 3), i, np.float32),
            "tags": None if i % 5 == 0 else ["a"] * (i % 2),
            "n": i,
        }))
    repo.commit("d", rows, row_group_size=200, progress=False)
    got = {r["column"]: r for r in repo.dataset("d").describe().to_pylist()}
    assert (got["blob"]["nulls"], got["blob"]["count"]) == (4, 6)
    assert (got["vec"]["nulls"], got["vec"]["count"]) == (3, 7)
    assert got["n"]["nulls"] == 0 and got["__key__"]["count"] == 10
    # a variable list's footer mixes empty lists with nulls: unknown rather than wrong
    assert got["tags"]["nulls"] in (None, 2)
    exact = {r["column"]: r for r in repo.dataset("d").describe(exact=True).to_pylist()}
    assert exact["vec"]["nulls"] == 3


def test_a_fractional_value_prunes_every_row_group_of_an_int_column(repo: Repository) -> None:
    repo.commit("n", [(f"k{i:03d}", {"label": i % 7}) for i in range(300)],
                row_group_size=256, progress=False)
    ds = repo.dataset("n")
    view = ds.where("label = 3.5")
    assert view.pruning["units_read"] == 0 and view.to_arrow().num_rows == 0
    other = ds.where("label != 3.5")
    assert other.to_arrow().num_rows == 300
    assert ds.where("label = 3.0").to_arrow().num_rows == len(range(3, 300, 7))
