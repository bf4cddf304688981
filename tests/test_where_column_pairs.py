"""where() comparing two number columns answers as DuckDB's SQL over samples() does (QA:
"i > f" with an int64 above 2**53, "u > i" with a uint64 above 2**63 - 1 and "i32 = u" raised
Arrow's bare ArrowInvalid from the comparison kernels' checked cast)."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from dload_arrow import PredicateError, Repository
from dload_arrow.catalog.filtering import compile_filter

BIG = 2**53 + 1
TABLE = pa.table({
    "__key__": list("abcdefg"),
    "i": pa.array([BIG, 2**53, -5, None, 0, 2**63 - 1, -(2**63)], pa.int64()),
    "f": pa.array([2.0**53, 2.0**53, -5.5, 1.0, None, 2.0**63, -(2.0**63)], pa.float64()),
    "f32": pa.array([2.0**53, 16777216.0, -5.0, 1.0, 0.0, 2.0**63, 1.0], pa.float32()),
    "u": pa.array([2**64 - 1, 2**53, 3, 4, None, 2**63, 0], pa.uint64()),
    "i32": pa.array([-1, 16777217, 3, 4, 0, 2**31 - 1, None], pa.int32()),
    "d": pa.array([decimal.Decimal("9007199254740993.5"), 1, 2, 3, 4, 5, None],
                  pa.decimal128(20, 1)),
})
# each as DuckDB answers it over samples() (checked in the test)
FILTERS = {
    "i > f": ["c"],  # 2**53 + 1 is 2**53 as a double, as in DuckDB
    "i = f": ["a", "b", "f", "g"],
    "f < i": ["c"],
    "u > i": ["a", "c", "f", "g"],
    "u = i": ["b"],
    "i32 = u": ["c", "d"],
    "i32 < u": ["a", "b", "f"],
    "u != i32": ["a", "b", "f"],
    "i32 = f32": ["b", "e"],  # compared as float32 (DuckDB's FLOAT): 16777217 rounds
    "u > f": ["a", "c", "d", "g"],
    "d > f": ["a", "c", "d"],  # the decimal correctly rounded
    "i32 BETWEEN i AND u": ["c"],
    "NOT (u <= i)": ["a", "c", "f", "g"],
}


@pytest.mark.parametrize("condition", list(FILTERS))
def test_two_number_columns_compare_as_duckdb_does(repo: Repository, condition: str) -> None:
    repo.commit("n", TABLE, progress=False)
    ds = repo.dataset("n")
    sql = repo.sql(f"SELECT __key__ FROM samples('n') WHERE {condition} ORDER BY __key__")
    assert sql["__key__"].to_pylist() == FILTERS[condition]
    assert ds.where(condition).to_arrow()["__key__"].to_pylist() == FILTERS[condition]
    assert ds.where(condition).to_polars().collect()["__key__"].to_list() == FILTERS[condition]
    expression = compile_filter(condition, TABLE.schema).expression
    assert TABLE.filter(expression)["__key__"].to_pylist() == FILTERS[condition]


def test_decimals_beyond_38_digits_compare_exactly(repo: Repository) -> None:
    # decimal(38, 30) against int64 needs 49 digits: Arrow's common decimal failed
    fine = pa.array([decimal.Decimal("1.5"), decimal.Decimal("-5")], pa.decimal128(38, 30))
    repo.commit("n", pa.table({"__key__": ["a", "b"], "x": fine,
                               "i": pa.array([1, -5], pa.int64()),
                               "u": pa.array([2**64 - 1, 0], pa.uint64())}), progress=False)
    ds = repo.dataset("n")
    assert ds.where("x > i").to_arrow()["__key__"].to_pylist() == ["a"]
    assert ds.where("x >= i AND x < u").to_arrow()["__key__"].to_pylist() == ["a", "b"]
    assert ds.where("x != i OR x > u").to_arrow()["__key__"].to_pylist() == ["a"]


def test_a_pair_no_decimal_holds_is_refused_naming_both_columns(repo: Repository) -> None:
    x = pa.array([decimal.Decimal("1.5")], pa.decimal256(76, 70))
    repo.commit("n", pa.table({"__key__": ["a"], "x": x, "i": [1]}), progress=False)
    with pytest.raises(PredicateError, match=r"filter 'x > i': columns 'x' \(decimal256\(76, "
                                             r"70\)\) and 'i' \(int64\).*89 digits"):
        repo.dataset("n").where("x > i")
