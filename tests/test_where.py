"""ds.where(): parsing, pruning by manifest statistics, and the same rows as a full scan."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from catalog_data import make_history, make_table
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dload_arrow import Dataset, Repository
from dload_arrow.catalog.filtering import compile_filter
from dload_arrow.catalog.predicate import PredicateError, parse_predicate
from dload_arrow.rowfilter import filter_rows


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Repository:
    d = tmp_path_factory.mktemp("where")
    repo = Repository.open(d / "root", cache_dir=d / "cache", cache_budget="unlimited")
    make_history(repo)
    return repo


def keys(table: pa.Table) -> list[str]:
    return table.column("__key__").to_pylist()


def full_scan(repo: Repository, condition: str) -> list[str]:
    """The reference: DuckDB over every row of the version, no statistics of ours."""
    got = repo.sql(f"SELECT __key__ FROM samples('a') WHERE {condition} ORDER BY __key__")
    return keys(got)


# --- random filters, compared with DuckDB's answer --------------------------------------------

_num = st.one_of(st.integers(-2, 12), st.floats(-1, 12, allow_nan=False).map(lambda x: round(x, 2)))
_score = st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3))
_tag = st.sampled_from(["'cat'", "'dog'", "'eel'", "'fox'", "'zebra'", "'a'"])
_op = st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="])
_key = st.integers(0, 520).map(lambda i: f"'k{i:06d}'")


def _leaf() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda o, v: f"label {o} {v}", _op, _num),
        st.builds(lambda o, v: f"{v} {o} label", _op, _num),
        st.builds(lambda o, v: f"score {o} {v}", _op, _score),
        st.builds(lambda o, v: f"tag {o} {v}", _op, _tag),
        st.builds(lambda o, v: f"__key__ {o} {v}", _op, _key),
        st.builds(lambda a, b: f"label BETWEEN {a} AND {b}", _num, _num),
        st.builds(lambda a, b: f"score NOT BETWEEN {a} AND {b}", _score, _score),
        st.builds(lambda vs: f"label IN ({', '.join(map(str, vs))})",
                  st.lists(st.integers(0, 11), min_size=1, max_size=4)),
        st.builds(lambda vs: f"tag NOT IN ({', '.join(vs)})", st.lists(_tag, min_size=1,
                                                                       max_size=3)),
        st.sampled_from(["tag IS NULL", "tag IS NOT NULL", "flag", "NOT flag", "flag = false",
                         "tag = NULL", "label IN (1, NULL)", "label NOT IN (1, NULL)"]),
    )


_FIXTURE = [HealthCheck.function_scoped_fixture]

_expr = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner),
    ),
    max_leaves=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=_FIXTURE)
@given(condition=_expr)
def test_where_returns_the_rows_of_a_full_scan(shared_repo: Repository, condition: str) -> None:
    view = shared_repo.dataset("a").where(condition)
    assert sorted(keys(view.to_arrow())) == full_scan(shared_repo, condition)


@settings(max_examples=25, deadline=None, suppress_health_check=_FIXTURE)
@given(first=_expr, second=_expr)
def test_chained_where_is_and(shared_repo: Repository, first: str, second: str) -> None:
    chained = shared_repo.dataset("a").where(first).where(second)
    both = shared_repo.dataset("a").where(f"({first}) AND ({second})")
    assert keys(chained.to_arrow()) == keys(both.to_arrow())
    assert set(chained.units or []) <= set(shared_repo.dataset("a").where(first).units or [])


@settings(max_examples=60, deadline=None)
@given(condition=_expr, chained=_expr)
def test_compute_masks_keep_the_rows_of_arrow_expressions(condition: str, chained: str) -> None:
    # where() filters with compute kernels (dload_arrow/catalog/masks.py), not Arrow's
    # expression filter: both must keep the same rows, nulls and NULL literals included.
    table = make_table(300)
    first = compile_filter(condition, table.schema)
    both = first.row_filter & compile_filter(chained, table.schema).row_filter
    for f in (first.row_filter, both, pickle.loads(pickle.dumps(both))):
        want = table.filter(f.expression)
        assert filter_rows(table, f).equals(want)
        for batch in table.to_batches(max_chunksize=70):
            assert filter_rows(batch, f).equals(batch.filter(f.expression))


def test_a_filter_on_a_missing_column_raises_like_arrow() -> None:
    # the reader then decodes every column of the row group (a filter on an unread column)
    table = make_table(10)
    f = compile_filter("label > 3", table.schema).row_filter
    with pytest.raises(pa.ArrowInvalid):
        filter_rows(table.drop_columns(["label"]), f)
    assert str(f) == str(f.expression)


# --- pruning ----------------------------------------------------------------------------------

def test_statistics_prune_row_groups_and_shards(shared_repo: Repository) -> None:
    ds = shared_repo.dataset("a")
    view = ds.where("label = 3")
    p = view.pruning
    assert p["units_total"] == sum(len(s.rg_rows) for s in ds.manifest.shards)
    assert 0 < p["units_read"] < p["units_total"] // 3
    assert p["units_skipped"] == p["units_total"] - p["units_read"]
    assert p["shards_read"] == 1 < p["shards_total"]
    assert p["filter"] == "(label = 3)"
    assert keys(view.to_arrow()) == full_scan(shared_repo, "label = 3")
    assert len(keys(view.to_arrow())) == 50


def test_impossible_and_unprunable_filters(shared_repo: Repository) -> None:
    ds = shared_repo.dataset("a")
    none = ds.where("label > 100")
    assert none.units == [] and none.to_arrow().num_rows == 0
    assert none.pruning["units_read"] == 0
    everything = ds.where("score >= 0")  # scores are spread over every row group
    assert everything.pruning["units_skipped"] == 0


def test_key_ranges_prune(shared_repo: Repository) -> None:
    view = shared_repo.dataset("a").where("__key__ >= 'k000400'")
    assert view.pruning["units_read"] < view.pruning["units_total"] // 3
    assert len(keys(view.to_arrow())) == 100


def test_pruned_view_downloads_only_matching_shards(
    s3_repo: Repository, s3_server,  # type: ignore[no-untyped-def]
) -> None:
    make_history(s3_repo)
    ds = s3_repo.dataset("a")
    s3_server.clear()
    got = ds.where("label < 2").to_arrow()
    assert got.num_rows == 100
    assert s3_server.count("GET", contains="shards/") == 1 < len(ds.manifest.shards)


# --- the view everywhere ----------------------------------------------------------------------

def test_view_is_honoured_by_batches_and_samples(shared_repo: Repository) -> None:
    view = shared_repo.dataset("a").where("tag = 'dog' and label < 4")
    want = full_scan(shared_repo, "tag = 'dog' and label < 4")
    assert [k for b in view.batches() for k in b.column("__key__").to_pylist()] == want
    assert [s["__key__"] for s in view.samples()] == want
    assert isinstance(view, Dataset) and view.version == shared_repo.dataset("a").version


def test_view_as_a_pipeline_source(shared_repo: Repository) -> None:
    view = shared_repo.dataset("a").where("label in (2, 5)")
    want = full_scan(shared_repo, "label in (2, 5)")
    assert [s["__key__"] for s in view.pipeline()] == want
    assert sorted(s["__key__"] for s in view.shuffle(seed=3)) == want


def test_view_in_a_torch_dataloader_with_workers(shared_repo: Repository) -> None:
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from dload_arrow.torch import as_iterable_dataset

    view = shared_repo.dataset("a").where("tag = 'eel' or label = 7")
    loader = DataLoader(as_iterable_dataset(view.pipeline(), to_tensors=False),
                        batch_size=None, num_workers=2)
    got = sorted(s["__key__"] for s in loader)
    assert got == full_scan(shared_repo, "tag = 'eel' or label = 7")


# --- parsing and validation -------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("label = ", "expected a column"),
    ("label = 3; drop table x", "cannot read"),
    ("label = 3 extra", "unexpected"),
    ("(label = 3", "expected \\)"),
    ("label NOT 3", "IN or BETWEEN"),
    ("label IN (score)", "literal"),
    ("__import__('os')", "expected"),
])
def test_malformed_filters_are_refused(text: str, message: str) -> None:
    with pytest.raises(PredicateError, match=message):
        parse_predicate(text)


@pytest.mark.parametrize("text, message", [
    ("nope = 1", "no column 'nope'"),
    ("label = 'three'", "label.*int64"),
    ("tag > 3", "tag.*string"),
    ("vec = 1", "vec.*scalar"),
    ("label", "compare it"),
    ("3", "not a condition"),
    ("label < 18446744073709551616", "does not fit in 64 bits.*float literal"),
])
def test_filters_that_do_not_fit_the_schema_are_refused(
    shared_repo: Repository, text: str, message: str
) -> None:
    with pytest.raises(PredicateError, match=message):
        shared_repo.dataset("a").where(text)


def test_integer_literals_take_the_column_type(repo: Repository) -> None:
    # an int64 literal against uint64 values above 2**63 - 1 made Arrow cast the column to
    # int64 and fail; the literal now takes the column's type when it fits
    big = pa.table({"__key__": ["a", "b", "c", "d"],
                    "n": pa.array([1, 2**63, 2**64 - 1, None], pa.uint64())})
    repo.commit("big", big, progress=False)
    ds = repo.dataset("big")
    assert keys(ds.where("n > 5").to_arrow()) == ["b", "c"]
    assert keys(ds.where("n IN (1, 3)").to_arrow()) == ["a"]
    assert keys(ds.where("n <= 1 OR n IS NULL").to_arrow()) == ["a", "d"]
    # Arrow's expression filter refused an integer literal against a decimal column
    import decimal

    dec = pa.table({"__key__": ["x", "y"], "d": pa.array([decimal.Decimal("3.00"),
                                                        decimal.Decimal("1.50")],
                                                       pa.decimal128(5, 2))})
    repo.commit("dec", dec, progress=False)
    assert keys(repo.dataset("dec").where("d = 3").to_arrow()) == ["x"]
    assert keys(repo.dataset("dec").where("d < 2").to_arrow()) == ["y"]


def test_string_literals_compare_with_time_columns(repo: Repository) -> None:
    import datetime as dt

    t = make_table(30).append_column(
        "when", pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(days=i) for i in range(30)],
                         pa.timestamp("us")))
    repo.commit("t", t, progress=False, row_group_size=600)
    view = repo.dataset("t").where("when >= '2024-01-21'")
    assert view.to_arrow().num_rows == 10
    assert view.pruning["units_skipped"] > 0


def test_quoted_identifiers_and_keywords_any_case(repo: Repository) -> None:
    t = make_table(40).rename_columns(["__key__", "my label", "score", "tag", "flag", "vec"])
    repo.commit("q", t, progress=False)
    got = repo.dataset("q").where('"my label" = 0 aNd tag iS nOt NuLl')
    assert got.to_arrow().num_rows == sum(
        1 for r in t.to_pylist() if r["my label"] == 0 and r["tag"] is not None)


_INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
              pa.uint32(), pa.uint64()]
_OPS = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


@st.composite
def _int_column_and_literal(draw: st.DrawFn) -> tuple[pa.DataType, list[int | None], str]:
    t = draw(st.sampled_from(_INT_TYPES))
    lo, hi = ((0, 2**t.bit_width - 1) if pa.types.is_unsigned_integer(t)
              else (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1))
    values = draw(st.lists(st.one_of(st.none(), st.integers(lo, hi),
                                     st.sampled_from([lo, hi, 0])), max_size=12))
    # around the type's range, within 64 bits (beyond, literals are refused: test above)
    near = st.integers(max(lo - 3, -(2**63)), min(hi + 3, 2**64 - 1))
    literal = draw(st.one_of(
        near.map(str),
        st.integers(-(2**63), 2**64 - 1).map(str),
        st.floats(allow_nan=False, min_value=-1e20, max_value=1e20).map(repr),
        st.sampled_from(["1.5", "-0.5", "1e400", "-1e400", "255.0", "-129.25"])))
    return t, values, literal


@settings(max_examples=150, deadline=None)
@given(_int_column_and_literal(), st.sampled_from(sorted(_OPS)), st.booleans())
def test_integer_columns_compare_with_any_number_literal(
        case: tuple[pa.DataType, list[int | None], str], op: str, negated: bool) -> None:
    """An integer column against an integer literal out of its type's range, or a float
    literal, keeps the rows SQL keeps (Arrow's common-type cast failed on uint64 > 2**63,
    on `u > -1`, and on integers above 2**53 against floats)."""
    t, values, literal = case
    table = pa.table({"__key__": [f"k{i:02d}" for i in range(len(values))],
                      "n": pa.array(values, t)})
    condition = f"n {op} {literal}"
    f = compile_filter(f"NOT ({condition})" if negated else condition, table.schema)
    v = float(literal) if any(c in literal for c in ".en") else int(literal)
    want = [k for k, x in zip(table.column("__key__").to_pylist(), values, strict=True)
            if x is not None and _OPS[op](x, v) != negated]  # exact: Python compares int/float
    assert keys(filter_rows(table, f.row_filter)) == want
    # the literal on the left: the same comparison, mirrored
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    mirrored = compile_filter(f"{literal} {flipped} n", table.schema).row_filter
    plain = [k for k, x in zip(table.column("__key__").to_pylist(), values, strict=True)
             if x is not None and _OPS[op](x, v)]
    assert keys(filter_rows(table, mirrored)) == plain
