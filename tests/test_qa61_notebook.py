"""QA notebook61: what a notebook shows (previews of SQL results and head(), a plan typed
without print, messages about wide tables) and values Arrow cannot hold."""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.errors import PredicateError, SchemaError


@pytest.fixture()
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root")


def test_to_pandas_of_any_table_keeps_ids_and_shapes(repo: dl.Repository) -> None:
    repo.commit("users", [(f"u{i}", {"user_id": None if i == 1 else 2**62 + i,
                                     "img": np.full((2, 3), i, np.uint8)}) for i in range(5)],
                progress=False)
    ds = repo.dataset("users")
    head = dl.to_pandas(ds.head(3))
    assert head["user_id"].tolist()[::2] == [2**62, 2**62 + 2] and head["user_id"].dtype == "Int64"
    assert head["img"][2].shape == (2, 3) and head["img"][2][0, 0] == 2
    sql = dl.to_pandas(repo.sql("SELECT user_id FROM samples('users') ORDER BY __key__ LIMIT 3"))
    assert sql["user_id"].tolist()[2] == 2**62 + 2
    assert dl.to_pandas(ds.take([0]).to_batches()[0])["user_id"].tolist() == [2**62]
    assert dl.to_pandas(pa.table({"x": [1, 2]}), nullable=True)["x"].dtype == "Int64"
    with pytest.raises(TypeError, match=r"a Dataset has its own ds\.to_pandas"):
        dl.to_pandas(ds)


def test_a_plan_shown_in_a_cell_is_its_summary(repo: dl.Repository) -> None:
    repo.commit("many", pa.table({"k": [f"k{i:05d}" for i in range(3000)],
                                  "x": np.arange(3000.0)}), key="k", shard_size="4KiB",
                row_group_size="4KiB", progress=False)
    plan = repo.dataset("many").plan()
    assert repr(plan) == f"<ReadPlan {plan}>" and repr(plan).endswith(": ok>")
    assert "digest" not in repr(plan) and len(repr(plan)) < 300


@pytest.mark.parametrize("bad", [decimal.Decimal("Infinity"), decimal.Decimal("-Infinity"),
                                 decimal.Decimal("NaN")])
def test_a_decimal_that_is_not_finite_is_refused_naming_it(repo: dl.Repository,
                                                           bad: decimal.Decimal) -> None:
    for rows in ([("a", {"price": decimal.Decimal("1.5")}), ("b", {"price": bad})],
                 [("b", {"price": bad})]):
        with pytest.raises(SchemaError, match=r"sample 'b', column 'price': Decimal\("):
            repo.commit("p", rows, progress=False)
    if not bad.is_nan():  # (pandas reads a NaN decimal as missing)
        with pytest.raises(SchemaError, match=r"column 'price': value Decimal\("):
            repo.commit("p", pd.DataFrame({"price": [decimal.Decimal("1.5"), bad]}),
                        progress=False)


def test_messages_about_wide_tables_are_cut_and_suggest_the_column(
        repo: dl.Repository) -> None:
    cols: dict[str, object] = {f"feature_{j:04d}": np.zeros(2, np.float32) for j in range(1500)}
    cols["id"] = ["a", "b"]
    repo.commit("wide", pa.table(cols), key="id", progress=False)
    ds = repo.dataset("wide")
    with pytest.raises(PredicateError, match="did you mean 'feature_0001'") as e:
        ds.where("featur_0001 > 3")
    assert len(str(e.value)) < 800 and "(1,481 more)" in str(e.value)
    with pytest.raises(PredicateError, match="did you mean 'feature_0001'"):
        ds.where("Feature_0001 > 3")
    with pytest.raises(SchemaError, match="did you mean 'feature_0001'") as e2:
        ds.to_pandas(columns=["featur_0001"])
    assert len(str(e2.value)) < 800
    with pytest.raises(SchemaError) as e3:
        repo.commit("x", [("a", {"v": 1}), ("b", {"v": "x" * 1_000_000})], progress=False)
    assert len(str(e3.value)) < 1000


def test_a_number_written_without_its_zeros_finds_the_column() -> None:
    from dload_arrow.errors import column_list

    names = [f"feature_{j:04d}" for j in range(100)]
    assert column_list(names, "feature_1").startswith("did you mean 'feature_0001'?")
    assert column_list(names, "Feature_17").startswith("did you mean 'feature_0017'?")
