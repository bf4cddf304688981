"""A number compared with a float32 column reads as the float32 nearest it, as DuckDB reads it:
where() (Arrow, its row masks and row-group pruning), polars and SQL keep the same rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import Repository

VALUES = np.concatenate([
    np.float32([0.1, 0.2, 0.3, 16777216, 3.4e38, -0.0, np.inf, -np.inf]),
    np.random.default_rng(0).random(200).astype(np.float32),
])


@pytest.fixture
def ds(repo: Repository) -> Any:
    keys = [f"k{i:04d}" for i in range(len(VALUES))]
    # small row groups, so pruning by the manifest's statistics takes part
    repo.commit("f", pa.table({"__key__": keys, "x": pa.array(VALUES)}), row_group_size=2000,
                progress=False)
    return repo.dataset("f")


@pytest.mark.parametrize("query", [
    "x = 0.1", "x <= 0.2", "x > 0.3", "x >= 0.3", "x != 0.3", "x < 1e40", "x > 1e40",
    "x = 16777217", "x IN (0.1, 0.2)", "x BETWEEN 0.1 AND 0.2", "NOT x > 0.3",
    f"x = {float(VALUES[20])!r}", f"x >= {float(VALUES[30]) + 1e-9!r}",
])
def test_where_polars_and_sql_keep_the_same_rows(repo: Repository, ds: Any,
                                                 query: str) -> None:
    view = ds.where(query)
    arrow = sorted(view.to_arrow()["__key__"].to_pylist())
    polars = sorted(view.to_polars().collect()["__key__"].to_list())
    sql = sorted(r["__key__"] for r in repo.sql(
        f"SELECT __key__ FROM samples('f') WHERE {query}").to_pylist())
    assert arrow == polars == sql


def test_a_stored_value_equals_the_literal_it_was_given(ds: Any) -> None:
    assert ds.where("x = 0.1").to_arrow()["x"].to_pylist() == [np.float32(0.1)]
    assert ds.where("x = 0.3").num_rows == 1
    assert ds.where("x > 0.3 AND x < 0.30001").num_rows == 0


def test_whole_number_literals_compare_exactly_with_integer_columns(repo: Repository) -> None:
    table = pa.table({"__key__": ["a", "b"], "n": [2**53, 2**53 + 1], "f": [1.0, 2.0]})
    repo.commit("n", table, progress=False)
    ds = repo.dataset("n")
    for query, keys in [("n = 9007199254740993.0", ["b"]), ("n = 9007199254740992.0", ["a"]),
                        ("n > 9.007199254740992e15", ["b"]), ("f < 9007199254740993", ["a", "b"]),
                        ("f < 1e16", ["a", "b"]), ("n IN (9007199254740993.0)", ["b"])]:
        view = ds.where(query)
        assert view.to_arrow()["__key__"].to_pylist() == keys, query
        assert view.to_polars().collect()["__key__"].to_list() == keys, query
