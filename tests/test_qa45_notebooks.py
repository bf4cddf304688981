"""QA round 45 (notebooks): polars reads a column name like ``^x.*$`` as a pattern and ``*``
as every column; to_polars() addresses every name exactly."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dload_arrow import Repository


def test_to_polars_reads_pattern_like_names_as_the_columns_they_name(repo: Repository) -> None:
    repo.commit("r", pa.table({"^x.*$": [10, 20, 30], "xa": [7, 8, 9], "*": [1, 2, 3]}),
                progress=False)
    ds = repo.dataset("r")
    assert ds.to_polars(["^x.*$"]).collect().to_dict(as_series=False) == {
        "__key__": ["000000000000", "000000000001", "000000000002"], "^x.*$": [10, 20, 30]}
    assert ds.to_polars(["*"]).collect().columns == ["__key__", "*"]
    assert ds.to_polars().collect().columns == ["__key__", "^x.*$", "xa", "*"]
    for where, want in [('"^x.*$" = 20', ["000000000001"]), ('"*" = 3', ["000000000002"]),
                        ('"^x.*$" > "xa"', ["000000000000", "000000000001", "000000000002"])]:
        view = ds.where(where)
        assert view.to_arrow()["__key__"].to_pylist() == want
        assert view.to_polars().collect()["__key__"].to_list() == want, where


def test_a_pattern_like_tensor_column_keeps_its_own_values(repo: Repository) -> None:
    rows = [(f"k{i}", {"^t$": np.full((2, 2), i, np.float32), "t": np.zeros((2, 2), np.float32)})
            for i in range(3)]
    repo.commit("tens", rows, progress=False)
    got = repo.dataset("tens").to_polars().collect()["^t$"].to_list()
    assert got == [[[float(i)] * 2] * 2 for i in range(3)]
