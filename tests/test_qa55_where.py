"""Fractional literals against integer columns compare as written (QA wherefuzz55).

The literal was read as a float64 and then taken as an integer: past 2**53 the fraction was
gone, so ``i < 9007199254740992.7`` left out 2**53 and ``u > 9223372036854775807.5`` left out
2**63, in ``where()`` and ``to_polars()`` alike, while SQL over ``samples()`` was right.
"""

from __future__ import annotations

import decimal
import operator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dload_arrow import Repository

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "=": operator.eq, "!=": operator.ne}
_INTS = [-(2**63), -(2**53) - 1, -3, 0, 5, 2**53 - 1, 2**53, 2**53 + 1, 2**62, 2**63 - 1]
_UINTS = [0, 5, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("where55")
    repo = Repository.open(root / "root", cache_dir=root / "cache")
    n = max(len(_INTS), len(_UINTS))
    table = pa.table({
        "__key__": [f"k{j:02d}" for j in range(n)],
        "i": pa.array([_INTS[j % len(_INTS)] for j in range(n)], pa.int64()),
        "u": pa.array([_UINTS[j % len(_UINTS)] for j in range(n)], pa.uint64()),
    })
    repo.commit("t", table, row_group_size=200, progress=False)  # a few rows per group
    return repo, table


@settings(max_examples=60, deadline=None)
@given(column=st.sampled_from(["i", "u"]), op=st.sampled_from(sorted(_OPS)),
       base=st.sampled_from(sorted(set(_INTS + _UINTS))), shift=st.integers(-2, 2),
       fraction=st.sampled_from(["0", "1", "4", "5", "7", "999"]), between=st.booleans())
def test_a_literal_with_a_point_compares_exactly(
        ds: Any, column: str, op: str, base: int, shift: int, fraction: str,
        between: bool) -> None:
    repo, table = ds
    whole = base + shift
    text = f"{whole}.{fraction}" if whole >= 0 else f"-{-whole}.{fraction}"
    exact = decimal.Decimal(text)
    values = table.column(column).to_pylist()
    if between:
        query = f"{column} BETWEEN {text} AND {2**64}.5"
        want = [k for k, v in zip(table.column("__key__").to_pylist(), values, strict=True)
                if exact <= v <= 2**64]
    else:
        query = f"{column} {op} {text}"
        want = [k for k, v in zip(table.column("__key__").to_pylist(), values, strict=True)
                if _OPS[op](decimal.Decimal(v), exact)]
    view = repo.dataset("t").where(query)
    assert sorted(view.to_arrow().column("__key__").to_pylist()) == sorted(want), query
    assert sorted(view.to_polars().collect()["__key__"].to_list()) == sorted(want), query
    sql = repo.sql(f"SELECT __key__ FROM samples('t') WHERE {query}").column(0).to_pylist()
    assert sorted(sql) == sorted(want), query


_F32 = [0.0, -0.0, 1e-5, 0.1, 0.3, 1.5, -2.5, 1e10, 3.4028234663852886e38, 1e-40, None]


@pytest.fixture(scope="module")
def f32(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("where55f")
    repo = Repository.open(root / "root", cache_dir=root / "cache")
    repo.commit("f", pa.table({"__key__": [f"k{j:02d}" for j in range(len(_F32))],
                               "x": pa.array(_F32, pa.float32())}),
                row_group_size=100, progress=False)
    return repo


_LITERALS = ["1e-5", "0.00001", "1e-300", "-1e-300", "0.3", "3e-1", "1e10", "1.5", "1.5e0",
             "0.1", "1e-1", "1e-40", "0", "3.4028234663852886e+38", "1e39", "2"]


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from([*sorted(_OPS), "IN", "NOT IN"]),
       literals=st.lists(st.sampled_from(_LITERALS), min_size=1, max_size=3))
def test_float32_columns_keep_the_rows_duckdb_keeps(f32: Any, op: str,
                                                    literals: list[str]) -> None:
    """A literal with an exponent is a DOUBLE in DuckDB and compares exactly (``x = 1e-300``
    held for 0.0 once rounded to float32), and makes an IN list's numbers doubles."""
    query = (f"x {op} ({', '.join(literals)})" if "IN" in op else f"x {op} {literals[0]}")
    view = f32.dataset("f").where(query)
    sql = f32.sql(f"SELECT __key__ FROM samples('f') WHERE {query}").column(0).to_pylist()
    assert sorted(view.to_arrow().column("__key__").to_pylist()) == sorted(sql), query
    assert sorted(view.to_polars().collect()["__key__"].to_list()) == sorted(sql), query
