"""QA round "notebook2": frames and column lists as a notebook user passes them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import Repository


def _tensor_repo(tmp_path: Path, dtype: type, second: np.ndarray | None) -> Repository:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    schema = pa.schema([pa.field("x", pa.list_(pa.from_numpy_dtype(dtype), 6), True,
                                 {"dload.shape": "[2, 3]"})])
    first = np.arange(6, dtype=dtype).reshape(2, 3)
    repo.commit("t", [("a", {"x": first}), ("b", {"x": second})], schema=schema,
                progress=False)
    return repo


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float32])
def test_to_pandas_keeps_the_tensor_shape_beside_a_null_sample(tmp_path: Path,
                                                               dtype: type) -> None:
    repo = _tensor_repo(tmp_path, dtype, None)
    cells = repo.dataset("t").to_pandas()["x"].tolist()
    assert cells[1] is None
    assert cells[0].shape == (2, 3) and cells[0].dtype == np.dtype(dtype)
    assert cells[0].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_columns_may_be_any_iterable_once(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", pa.table({"x": [1, 2], "y": [3, 4], "img": [b"a", b"b"]}), progress=False)
    ds = repo.dataset("d")

    def gen() -> object:
        return (c for c in ds.schema.names if c != "img")

    want = ["__key__", "x", "y"]
    assert ds.to_arrow(columns=gen()).column_names == want  # type: ignore[arg-type]
    assert list(ds.to_pandas(columns=gen()).columns) == want  # type: ignore[arg-type]
    assert ds.head(1, columns=gen()).column_names == want  # type: ignore[arg-type]
    view = ds.where("x > 1")
    assert view.to_arrow(columns=gen()).to_pylist() == [  # type: ignore[arg-type]
        {"__key__": ds.to_arrow()["__key__"][1].as_py(), "x": 2, "y": 4}]


@pytest.mark.parametrize(("zone", "utc"), [
    ("Europe/Berlin", "9999-12-31T23:00:00"),  # year 10000 in Berlin
    ("America/New_York", "0001-01-01T01:00:00"),  # year 0 in New York
    ("+05:30", "9999-12-31T20:00:00"),
])
def test_zoned_times_outside_years_1_to_9999_in_their_zone_are_refused(
        tmp_path: Path, zone: str, utc: str) -> None:
    from dload_arrow import SchemaError

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    ticks = int(np.datetime64(utc, "us").astype(np.int64))
    col = pa.array([ticks], pa.int64()).cast(pa.timestamp("us", zone))
    with pytest.raises(SchemaError, match=f"zone {re.escape(zone)}.*UTC"):
        repo.commit("z", pa.table({"t": col}), progress=False)
    assert repo.datasets() == []
    last = int(np.datetime64("9999-12-31T00:00:00", "us").astype(np.int64))
    ok = pa.array([last], pa.int64()).cast(pa.timestamp("us", "UTC"))
    repo.commit("u", pa.table({"t": ok}), progress=False)  # in range in its zone
    assert repo.dataset("u")[0]["t"].year == 9999


def test_to_polars_refuses_list_views_with_a_way_out(tmp_path: Path) -> None:
    from dload_arrow import SchemaError

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    lv = pa.ListViewArray.from_arrays(pa.array([0, 2]), pa.array([2, 1]), pa.array([1, 2, 3]))
    repo.commit("lv", pa.table({"x": [1, 2], "v": lv}), progress=False)
    ds = repo.dataset("lv")
    for columns in (None, ["x"]):
        with pytest.raises(SchemaError, match=r"column 'v'.*list views.*to_arrow"):
            ds.to_polars(columns=columns)
    assert ds.to_arrow().column("v").to_pylist() == [[1, 2], [3]]
    fixed = pa.array(lv.to_pylist(), pa.list_(lv.type.value_type))  # the message's way out
    repo.commit("l", pa.table({"x": [1, 2], "v": fixed}), progress=False)
    assert repo.dataset("l").to_polars().collect()["v"].to_list() == [[1, 2], [3]]


def test_types_parquet_cannot_store_are_refused_with_a_way_out(tmp_path: Path) -> None:
    import pyarrow.compute as pc

    from dload_arrow import SchemaError

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    wait = repo.sql("select interval '90 minutes' as wait")  # what DuckDB gives for INTERVAL
    with pytest.raises(SchemaError, match=r"'wait'.*\(interval\); .*epoch\(col\)"):
        repo.commit("w", wait, progress=False)
    nested = pa.array([[pa.MonthDayNano([0, 0, 5])]], pa.list_(pa.month_day_nano_interval()))
    with pytest.raises(SchemaError, match=r"\(interval at 'n\[\]'\)"):
        repo.commit("w", pa.table({"n": nested}), progress=False)
    ree = pa.RunEndEncodedArray.from_arrays([2], pa.array([7]))
    with pytest.raises(SchemaError, match="run_end_decode"):
        repo.commit("w", pa.table({"r": ree}), progress=False)
    union = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()),
                                      [pa.array([1, 2]), pa.array(["a", "b"])])
    with pytest.raises(SchemaError, match="union"):
        repo.commit("w", pa.table({"u": union}), progress=False)
    assert repo.datasets() == []
    seconds = repo.sql("select epoch(interval '90 minutes') as wait")  # the way out
    repo.commit("w", seconds, progress=False)
    repo.commit("r", pa.table({"r": pc.run_end_decode(ree)}), progress=False)
    assert repo.dataset("w")[0]["wait"] == 5400 and repo.dataset("r")[1]["r"] == 7


def test_a_to_pandas_map_column_commits_back_with_schema(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    mtype = pa.map_(pa.string(), pa.int64())
    m = pa.array([[("x", 1)], [("y", 2)]], mtype)
    first = repo.commit("m", pa.table({"__key__": ["a", "b"], "m": m, "n": [1, 2]}),
                        progress=False)
    df = repo.dataset("m").to_pandas()
    again = repo.commit("m", df, schema=pa.schema([("m", mtype), ("n", pa.int64())]),
                        progress=False)
    assert again.version == first.version  # the same rows, the same id
    from dload_arrow import SchemaError

    with pytest.raises(SchemaError, match=r"column 'n'.*schema= gives it, list<"):
        repo.commit("bad", df, schema=pa.schema([("m", mtype), ("n", pa.list_(pa.string()))]),
                    progress=False)


def test_schema_for_a_dataframe_keeps_the_dataframe_checks(tmp_path: Path) -> None:
    import pandas as pd

    from dload_arrow import SchemaError

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    cases = [
        (pd.DataFrame({"s": [{1, 2}, {3}]}), pa.schema([("s", pa.list_(pa.int64()))]), "a set"),
        (pd.DataFrame({"b": [b"x", "y"]}), pa.schema([("b", pa.binary())]), "among bytes"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), pa.schema([("a", pa.int64())]),
         "duplicate column"),
    ]
    for df, schema, why in cases:
        with pytest.raises(SchemaError, match=why):
            repo.commit("d", df, schema=schema, progress=False)
    assert repo.datasets() == []


def test_an_integer_tensor_cell_with_a_missing_item_reads_exactly(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    schema = pa.schema([pa.field("x", pa.list_(pa.int64(), 4), True, {"dload.shape": "[2, 2]"})])
    col = pa.array([[1, 2, None, 4], [2**60, 5, 6, 7], None], pa.list_(pa.int64(), 4))
    repo.commit("t", pa.table({"x": col}, schema=schema), progress=False)
    ds = repo.dataset("t")
    for cells in ([s["x"] for s in ds.samples()], ds.to_pandas()["x"].tolist()):
        assert cells[0].shape == (2, 2) and cells[0].tolist() == [[1, 2], [None, 4]]
        assert cells[1].dtype == np.int64 and cells[1][0, 0] == 2**60
        assert cells[2] is None
