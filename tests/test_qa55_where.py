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
