"""A number compared with a decimal column is read exactly as written, not as the float64
nearest it: where() (Arrow, row masks, row-group pruning), polars and SQL keep the same rows,
the rows Python's Decimal comparison keeps. A number with an exponent is a float, as in
DuckDB."""

from __future__ import annotations

import decimal
import operator
from typing import Any

import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError

D = decimal.Decimal
VALUES = [D("12345678901234567.89"), D("12345678901234567.88"), D("-0.01"), D("0.10"),
          D("99999999999999999.99"), None, D("0.00"), D("12345678901234568.00")]


@pytest.fixture
def ds(repo: Repository) -> Any:
    keys = [f"k{i}" for i in range(len(VALUES))]
    repo.commit("d", pa.table({"__key__": keys, "d": pa.array(VALUES, pa.decimal128(20, 2))}),
                row_group_size=2, progress=False)  # row groups of 2: pruning takes part
    return repo.dataset("d")


_OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}


@pytest.mark.parametrize(("op", "literal"), [
    ("=", "12345678901234567.89"), ("=", "12345678901234567.88"), (">", "12345678901234567.88"),
    (">=", "12345678901234567.89"), ("<", "12345678901234567.89"), ("!=", "12345678901234567.89"),
    ("=", "0.1"), ("<", "0"), ("=", "12345678901234568"), (">", "1.2345678901234567885e16"),
    ("<=", "99999999999999999.99"), ("=", "12345678901234567.885"),
    # more digits than decimal128 holds beside the column's (QA sql 42: ArrowInvalid mid-read)
    (">", "0.049999999999999999999999999"), ("<=", "12345678901234567.889999999999999999999"),
    ("=", "12345678901234567.8900000000000000000001"), ("!=", "0.1000000000000000000000001"),
    (">", "99999999999999999999999.5"), ("<", "-99999999999999999999999.5"),
    (">=", "-0.0100000000000000000000000000000001"),
])
def test_where_keeps_the_rows_decimal_comparison_keeps(repo: Repository, ds: Any, op: str,
                                                        literal: str) -> None:
    query = f"d {op} {literal}"
    exact = "e" not in literal  # with an exponent: a float, as in DuckDB (a DOUBLE)
    want = sorted(f"k{i}" for i, v in enumerate(VALUES) if v is not None and (
        _OPS[op](v, D(literal)) if exact else _OPS[op](float(v), float(literal))))
    view = ds.where(query)
    assert sorted(view.to_arrow()["__key__"].to_pylist()) == want, query
    assert sorted(view.to_polars().collect()["__key__"].to_list()) == want, query
    assert sorted(s["__key__"] for s in view.samples()) == want, query
    if len(literal.lstrip("-").replace(".", "")) <= 25:  # DuckDB: beyond 38 digits with the
        sql = repo.sql(f"SELECT __key__ FROM samples('d') WHERE {query}")  # column's, a
        assert sorted(sql["__key__"].to_pylist()) == want, query  # DOUBLE or an error


def test_in_and_between_over_a_decimal_column_are_exact(ds: Any) -> None:
    got = ds.where("d IN (12345678901234567.89, 0.1)").to_arrow()["__key__"].to_pylist()
    assert sorted(got) == ["k0", "k3"]
    got = ds.where("d BETWEEN 12345678901234567.885 AND 12345678901234567.89").to_arrow()
    assert got["__key__"].to_pylist() == ["k0"]


@pytest.mark.parametrize("typ", [pa.decimal128(38, 0), pa.decimal256(76, 0)])
def test_integers_past_64_bits_compare_exactly_with_a_wide_decimal_column(
        repo: Repository, typ: pa.DataType) -> None:
    """They were refused as "no column holds it; use a float literal" (QA sql 42)."""
    values = [D(2**64), D(2**64 + 1), D(5), D(10**37)]
    repo.commit("w", pa.table({"__key__": ["a", "b", "c", "d"], "n": pa.array(values, typ)}),
                progress=False)
    view = repo.dataset("w")
    bound = 10 ** typ.precision  # one past the largest value the column holds
    for op, literal in (("=", 2**64 + 1), (">", 2**64), ("<", 10**40), (">=", -(10**40)),
                        ("=", f"{2**64}.0"), (">", "0.000000000000000000000000000000000001"),
                        (">", -bound), ("<", -bound), (">", 1 - bound), ("<", bound),
                        (">=", f"-{bound}.5"), ("!=", 10**90), ("<", -(10**90))):
        query = f"n {op} {literal}"
        want = sorted(k for k, v in zip("abcd", values, strict=True)
                      if _OPS[op](v, D(str(literal))))
        assert sorted(view.where(query).to_arrow()["__key__"].to_pylist()) == want, query
        assert sorted(s["__key__"] for s in view.where(query).samples()) == want, query
        if typ.bit_width == 128:  # (polars holds decimals of at most 38 digits)
            got = view.where(query).to_polars().collect()["__key__"].to_list()
            assert sorted(got) == want, query



def test_wide_decimals_inside_lists_and_structs_are_refused_by_polars(
        repo: Repository) -> None:
    """(QA roundtrip55) polars read them as 128-bit numbers: a value past 38 digits came back
    as another number, silently; only a top-level column was refused."""
    big = D("1234567890123456789012345678901234567890.5")
    table = pa.table({
        "__key__": ["a", "b"],
        "ld": pa.array([[big, None], []], pa.list_(pa.decimal256(41, 1))),
        "sd": pa.array([{"x": big}, None], pa.struct([("x", pa.decimal256(41, 1))])),
        "ok": pa.array([[D("1.5")], None], pa.list_(pa.decimal128(10, 1))),
    })
    repo.commit("n", table, progress=False)
    ds = repo.dataset("n")
    for column in ("ld", "sd"):
        with pytest.raises(SchemaError, match=f"to_polars\\(\\) cannot read column '{column}' "
                                              "of 'n': it is .*decimal256\\(41, 1\\).*, and "
                                              "polars holds decimals of at most 38 digits"):
            ds.to_polars(columns=[column]).collect()
    assert ds.to_polars(columns=["ok"]).collect()["ok"].to_list()[0] == [D("1.5")]
    assert ds.to_arrow().column("ld").to_pylist()[0] == [big, None]  # Arrow reads them
