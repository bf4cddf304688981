"""where() on times and to_pandas() keep every value exact; DataFrame commits name the
column they refuse (QA pass 7).

Found by QA: a time literal lost its nanoseconds against a timestamp[ns] column, and one with
more fractional digits than the column's unit was refused; to_pandas() made an integer list
cell holding a null into floats, failed on lists of fixed-size binary, and gave null and NaN
of one float column the same NaN; a pandas map column raised Arrow's bare ArrowTypeError.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

from dload_arrow import Dataset, PredicateError, Repository, SchemaError
from dload_arrow.catalog.filtering import compile_filter


def test_an_integer_list_cell_holding_a_null_keeps_exact_integers(repo: Repository) -> None:
    big = 2**53 + 1
    ids = pa.array([[big, None], None, [big, 2]], pa.list_(pa.int64()))
    repo.commit("d", pa.table({"k": ["a", "b", "c"], "ids": ids}), key="k", progress=False)
    cells = repo.dataset("d").to_pandas()["ids"]
    assert list(cells[0]) == [big, None]
    assert cells[1] is None
    assert cells[2].dtype.kind == "i" and cells[2].tolist() == [big, 2]


def test_to_pandas_converts_lists_of_fixed_size_binary(repo: Repository) -> None:
    hashes = pa.array([[b"ab", b"cd"], None], pa.list_(pa.binary(2)))
    repo.commit("d", pa.table({"k": ["a", "b"], "h": hashes}), key="k", progress=False)
    cells = repo.dataset("d").to_pandas()["h"]
    assert list(cells[0]) == [b"ab", b"cd"] and cells[1] is None


def test_a_float_column_with_null_and_nan_tells_them_apart(repo: Repository) -> None:
    scores = pa.array([float("nan"), None, 1.5])
    repo.commit("d", pa.table({"k": ["a", "b", "c"], "score": scores,
                               "only_nan": [float("nan"), 1.0, 2.0]}), key="k", progress=False)
    df = repo.dataset("d").to_pandas()
    assert df["score"].dtype == pd.Float64Dtype()
    assert df["score"].isna().tolist() == [False, True, False]
    assert df["score"][2] == 1.5
    assert df["only_nan"].dtype == "float64"


def test_a_pandas_map_column_is_refused_naming_the_column_and_the_fix(
        repo: Repository) -> None:
    df = pd.DataFrame({"k": ["a"], "m": [[("x", 1)]]})
    with pytest.raises(SchemaError, match=r"column 'm': value \[\('x', 1\)\] is not a value "
                                          r"Arrow can store.*pa\.map_"):
        repo.commit("d", df, key="k", progress=False)


@pytest.fixture
def nanos(repo: Repository) -> Dataset:
    stamps = pa.array([1, 999, 2000, None], pa.timestamp("ns"))
    zoned = pa.array([1, 999, 2000, None], pa.timestamp("ns", "UTC"))
    repo.commit("n", pa.table({"k": ["a", "b", "c", "z"], "ts": stamps, "tz": zoned}), key="k",
                progress=False, row_group_size=1)  # one row per row group: pruning decides
    return repo.dataset("n")


@pytest.mark.parametrize(("condition", "want"), [
    ("ts = '1970-01-01T00:00:00.000000001'", ["a"]),
    ("ts <= '1970-01-01T00:00:00.000000001'", ["a"]),
    ("ts > '1970-01-01T00:00:00.000000500'", ["b", "c"]),
    ("ts = '1970-01-01T00:00:00'", []),
    ("ts != '1970-01-01T00:00:00.000000999'", ["a", "c"]),
    ("ts < '1970-01-01T00:00:00.000000999'", ["a"]),
    ("ts >= '1970-01-01T00:00:00.000000999'", ["b", "c"]),
    ("ts IN ('1970-01-01T00:00:00.000000999', '1970-01-01T00:00:00.000002')", ["b", "c"]),
    ("ts NOT IN ('1970-01-01T00:00:00.000000001')", ["b", "c"]),
    ("ts BETWEEN '1970-01-01T00:00:00.000000002' AND '1970-01-01T00:00:00.000000999'", ["b"]),
    ("ts NOT BETWEEN '1970-01-01T00:00:00.000000002' AND '1970-01-01T00:00:00.000001'", ["a",
                                                                                          "c"]),
    ("'1970-01-01T00:00:00.000000001' < ts", ["b", "c"]),
    ("tz = '1970-01-01T00:00:00.000000999Z'", ["b"]),
    ("tz < '1970-01-01T00:00:00.000000999'", ["a"]),
    ("ts = '1970-01-01T00:00:00.0000000015'", []),  # finer than the unit: equals no value
    ("ts < '1970-01-01T00:00:00.0000000015'", ["a"]),
    ("ts < '3000-01-01'", ["a", "b", "c"]),  # beyond the nanosecond range
])
def test_where_compares_time_literals_to_the_nanosecond(
        nanos: Dataset, condition: str, want: list[str]) -> None:
    view = nanos.where(condition)
    assert view.to_arrow()["__key__"].to_pylist() == want
    if "3000" not in condition:  # (beyond the range, each row is compared with itself)
        assert view.pruning["units_read"] == len(want)  # statistics pruned exactly
    assert sorted(nanos.to_arrow().filter(
        compile_filter(condition, nanos.schema).expression)["__key__"].to_pylist()) == want


def test_where_reads_times_with_more_digits_than_the_column_unit(repo: Repository) -> None:
    when = dt.datetime(2024, 1, 21, 10, 30, 0, 123000)
    repo.commit("d", pa.table({
        "k": ["a", "b"], "ms": pa.array([when, None], pa.timestamp("ms")),
        "s": pa.array([when.replace(microsecond=0), None], pa.timestamp("s")),
        "mstz": pa.array([when, None], pa.timestamp("ms", "UTC")),
    }), key="k", progress=False)
    ds = repo.dataset("d")

    def keys(condition: str) -> list[str]:
        return ds.where(condition).to_arrow()["__key__"].to_pylist()

    assert keys(f"ms = '{when.isoformat()}'") == ["a"]  # '2024-01-21T10:30:00.123000'
    assert keys("ms = '2024-01-21 10:30:00.123000'") == ["a"]
    assert keys("mstz = '2024-01-21T10:30:00.123000Z'") == ["a"]
    assert keys("s = '2024-01-21T10:30:00.000'") == ["a"]
    assert keys("ms = '2024-01-21T10:30:00.1234'") == []  # no millisecond equals it
    assert keys("ms != '2024-01-21T10:30:00.1234'") == ["a"]
    assert keys("ms < '2024-01-21T10:30:00.123456'") == ["a"]
    assert keys("ms > '2024-01-21T10:30:00.122999'") == ["a"]
    assert keys("ms > '2024-01-21T10:30:00.123001'") == []
    assert keys("ms BETWEEN '2024-01-21T10:30:00.1229' AND '2024-01-21T10:30:00.1231'") == ["a"]
    assert ds.where("ms = '2024-01-21T10:30:00.1234'").to_polars().collect().height == 0
    with pytest.raises(PredicateError, match=r"'soon' is not a timestamp\[ms\] value for column "
                                             r"'ms'.*write an ISO time"):
        ds.where("ms = 'soon'")


@pytest.mark.parametrize("typ", [pa.time32("s"), pa.time32("ms"), pa.time64("us"),
                                 pa.time64("ns")])
def test_a_time_of_day_column_compares_with_a_time_literal(repo: Repository,
                                                           typ: pa.DataType) -> None:
    times = pa.array([dt.time(9, 0), dt.time(10, 30), dt.time(11, 30)]).cast(typ)
    repo.commit("d", pa.table({"k": ["a", "b", "c"], "t": times}), key="k", progress=False)
    ds = repo.dataset("d")
    for text, want in [("t < '10:30'", ["a"]), ("t = '10:30:00'", ["b"]),
                       ("t >= '10:30:00.000001'", ["c"]), ("t in ('09:00', '11:30')", ["a", "c"]),
                       ("t between '09:30' and '11:00'", ["b"])]:
        assert [s["__key__"] for s in ds.where(text).samples()] == want, text
        assert ds.where(text).to_polars().collect()["__key__"].to_list() == want, text
    with pytest.raises(PredicateError, match="not a time of day"):
        ds.where("t < '25:00'")


def test_a_long_in_list_of_times_is_read(repo: Repository) -> None:
    base = dt.datetime(2024, 1, 21, 10, 30)
    ts = [base + dt.timedelta(seconds=i) for i in range(1600)]
    repo.commit("t", pa.table({"k": [f"k{i:05d}" for i in range(1600)],
                               "ts": pa.array(ts, pa.timestamp("us"))}), key="k",
                progress=False)
    ds = repo.dataset("t")
    listed = ", ".join(f"'{t}'" for t in ts[:1500])
    assert ds.where(f"ts in ({listed})").to_arrow().num_rows == 1500
    assert ds.where(f"ts not in ({listed})").to_polars().collect().height == 100


@pytest.mark.parametrize("condition", ["i != f", "NOT (i = f)", "NOT (i < f)", "i = f",
                                       "NOT (i != f)", "NOT (i BETWEEN f AND 10)", "f != 2"])
def test_to_polars_keeps_a_comparison_with_a_null_null_beside_nan(repo: Repository,
                                                                 condition: str) -> None:
    """QA: `i != f` with i null and f NaN kept the row in to_polars() (null | NaN-test was
    true) and not in to_arrow() or SQL; NOT (i = f) likewise."""
    nan = float("nan")
    repo.commit("t", pa.table({"k": ["a", "b", "c", "d"], "i": [None, 1, 3, None],
                               "f": [nan, 2.0, nan, None]}), key="k", progress=False)
    view = repo.dataset("t").where(condition)
    arrow = sorted(view.to_arrow().column("__key__").to_pylist())
    assert sorted(view.to_polars().collect()["__key__"].to_list()) == arrow
    assert len(view) == len(arrow)


def test_fixed_shape_tensor_columns_keep_their_shape_in_dataframes(repo: Repository) -> None:
    """QA: an arrow.fixed_shape_tensor column came out flat in to_pandas() ((4,) cells for
    (2, 2) tensors) and as polars' Extension type in to_polars(), where the TUTORIAL says
    tensor columns, extension ones included, keep their shape."""
    import numpy as np
    import polars as pl

    typ = pa.fixed_shape_tensor(pa.float32(), (2, 2))
    arr = pa.ExtensionArray.from_storage(
        typ, pa.array([[1, 2, 3, 4], None, [5, 6, 7, 8]], pa.list_(pa.float32(), 4)))
    repo.commit("t", pa.table({"k": ["a", "b", "c"], "t": arr}), key="k", progress=False)
    ds = repo.dataset("t")
    cells = ds.to_pandas()["t"].tolist()
    assert cells[0].shape == (2, 2) and cells[1] is None
    assert np.array_equal(cells[2], [[5, 6], [7, 8]])
    frame = ds.to_polars().collect()
    assert frame.schema["t"] == pl.Array(pl.Float32, shape=(2, 2))
    assert frame["t"].to_list() == [[[1, 2], [3, 4]], None, [[5, 6], [7, 8]]]
    empty = ds.where("__key__ = 'none'").to_polars().collect()
    assert empty.height == 0 and empty.schema["t"] == pl.Array(pl.Float32, shape=(2, 2))
