"""to_polars() refuses a decimal256 column wider than 38 digits up front, naming it (QA: it
failed only at collect(), with polars' "precision must be between 1 and 38")."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError

WIDE = pa.array([decimal.Decimal("1" * 39 + ".5"), None], pa.decimal256(40, 1))


@pytest.fixture
def repo_with_wide(repo: Repository) -> Repository:
    narrow = pa.array([decimal.Decimal("1.5"), None], pa.decimal256(10, 1))
    repo.commit("n", pa.table({"__key__": ["a", "b"], "n": [1, 2], "wide": WIDE,
                               "narrow": narrow}), progress=False)
    return repo


def test_a_wide_decimal_is_refused_naming_the_column_and_the_way_round(
        repo_with_wide: Repository) -> None:
    ds = repo_with_wide.dataset("n")
    with pytest.raises(SchemaError, match=r"to_polars\(\) cannot read column 'wide' of 'n': it "
                                          r"is decimal256\(40, 1\).*columns=\[\.\.\.\].*to_arrow"):
        ds.to_polars()
    with pytest.raises(SchemaError, match=r"column 'wide'"):  # read by the filter
        ds.where("wide IS NULL").to_polars(columns=["n"])
    # left out, the rest reads; a narrow decimal256 polars holds
    frame = ds.where("n = 1").to_polars(columns=["n", "narrow"]).collect()
    assert frame["narrow"].to_list() == [decimal.Decimal("1.5")]
    assert ds.to_arrow(columns=["wide"])["wide"].to_pylist() == WIDE.to_pylist()


def test_sql_over_samples_reads_a_wide_decimal_as_double(repo_with_wide: Repository) -> None:
    # documented: DuckDB holds 38 digits
    typ = repo_with_wide.sql("SELECT typeof(wide) AS t FROM samples('n') LIMIT 1")["t"]
    assert typ.to_pylist() == ["DOUBLE"]
