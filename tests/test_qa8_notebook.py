"""QA8 (notebook): SQL over case-twin columns, where() on two literals, a view's repr, and
the quoting advice for odd column names in where()."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dload_arrow import Repository
from dload_arrow.catalog.filtering import compile_filter
from dload_arrow.errors import PredicateError, SqlError


def test_sql_refuses_columns_that_differ_only_in_case(repo: Repository) -> None:
    repo.commit("twins", [(f"k{i}", {"Label": i, "label": 100 + i}) for i in range(5)],
                progress=False)
    # DuckDB reads "label" as Label even quoted: a silent wrong answer, so refused
    for query in ["select \"label\" from samples('twins') where \"label\" >= 100",
                  "select * from samples('twins')"]:
        with pytest.raises(SqlError) as e:
            repo.sql(query)
        text = str(e.value)
        assert "'Label' and 'label'" in text and "differ only in ASCII case" in text
        assert "rename" in text and "to_polars()" in text and "where()" in text
    ds = repo.dataset("twins")  # the other readers keep them apart
    assert ds.where("label >= 100").num_rows == 5
    assert ds.where("Label >= 100").num_rows == 0


def test_sql_reads_columns_without_case_twins(repo: Repository) -> None:
    repo.commit("plain", [(f"k{i}", {"Label": i, "labels": 100 + i}) for i in range(3)],
                progress=False)
    got = repo.sql("select \"Label\", labels from samples('plain') order by 1")
    assert got.to_pydict() == {"Label": [0, 1, 2], "labels": [100, 101, 102]}


_SCHEMA = pa.schema([("label", pa.int64()), ("name", pa.string())])


@pytest.mark.parametrize(("condition", "shown"), [
    ("true = 3", "cannot compare TRUE with 3"),
    ("'a' = 3", "cannot compare 'a' with 3"),
    ("1 < 'x'", "cannot compare 1 with 'x'"),
    ("label = 3 or true = 1", "cannot compare TRUE with 1"),
])
def test_where_refuses_comparing_two_values_of_different_kinds(condition: str,
                                                               shown: str) -> None:
    with pytest.raises(PredicateError) as e:
        compile_filter(condition, _SCHEMA)
    text = str(e.value)
    assert repr(condition) in text and shown in text
    assert "needs a column" in text and 'double-quoted, e.g. "true" = 3' in text


def test_where_hint_names_the_column_a_bare_keyword_meant(repo: Repository) -> None:
    repo.commit("kw", [(f"k{i}", {"true": i, "null": i}) for i in range(6)], progress=False)
    ds = repo.dataset("kw")
    with pytest.raises(PredicateError, match=r"""double-quote it: "true" = 3"""):
        ds.where("true = 3")
    with pytest.raises(PredicateError, match=r"""double-quote it: "null" = 3"""):
        ds.where("null = 3")
    assert ds.where('"true" = 3').to_arrow().column("__key__").to_pylist() == ["k3"]


def test_where_answers_comparisons_of_two_values_of_one_kind(repo: Repository) -> None:
    repo.commit("d", [(f"k{i}", {"label": i}) for i in range(4)], progress=False)
    ds = repo.dataset("d")
    for condition, rows in [("1 = 1", 4), ("1 < 2", 4), ("'b' < 'a'", 0),
                            ("label = 3 or 2 >= 1.5", 4), ("label = 3 and null = null", 0),
                            ("true != false", 4), ("label = 1 or null = 'a'", 1),
                            ("label = 1 and null = 3", 0)]:  # NULL = value: unknown (SQL)
        assert len(ds.where(condition).to_arrow()) == rows, condition


def test_view_repr_cuts_a_long_condition(repo: Repository) -> None:
    repo.commit("d", [(f"k{i}", {"label": i}) for i in range(6)], progress=False)
    ds = repo.dataset("d")
    condition = "label in (" + ", ".join(str(i) for i in range(20000)) + ")"
    view = ds.where(condition)
    text = repr(view)
    assert len(text) < 400 and f"... ({len(condition)} chars)" in text
    assert condition[:200] in text
    chained = repr(view.where("label > 1"))
    assert "where='(label in (0, 1, 2" in chained and "chars)" in chained
    short = repr(ds.where("label > 1").where("label < 4"))
    assert "where='(label > 1) AND (label < 4)'" in short and "chars)" not in short


@pytest.mark.parametrize(("condition", "fixed"), [
    ("é名 = 'v10'", """quote it: "é名" = 'v10'"""),
    ("1st = 3", 'quote it: "1st" = 3'),
    ("and = 3", 'quote it: "and" = 3'),
    ("not = 3", 'quote it: "not" = 3'),
    ("x y = 3 and 1st > 1", 'quote it: "x y" = 3 and 1st > 1'),
])
def test_where_parse_error_says_to_quote_a_column_name(condition: str, fixed: str) -> None:
    schema = pa.schema([(n, pa.int64()) for n in ["é名", "1st", "and", "not", "x y", "x"]])
    with pytest.raises(PredicateError) as e:
        compile_filter(condition, schema)
    assert fixed in str(e.value) and repr(condition) in str(e.value)


def test_where_parse_error_without_such_a_column_keeps_the_example() -> None:
    with pytest.raises(PredicateError) as e:
        compile_filter("1st = 3", _SCHEMA)
    assert "quote it" not in str(e.value) and "write comparisons such as" in str(e.value)


def test_sql_refuses_struct_fields_that_differ_only_in_case(repo: Repository) -> None:
    repo.commit("s", [(f"k{i}", {"s": {"A": i, "a": 10 + i}}) for i in range(3)],
                progress=False)
    with pytest.raises(SqlError, match=r"'s.A' and 's.a' differ only in ASCII case"):
        repo.sql("select s.a from samples('s')")
