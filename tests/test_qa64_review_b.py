"""QA review64b, the review of this session's fixes: an empty archive among several was taken
as an empty input (--allow-empty dropped the others' samples); numbers in a time column of a
commit's own schema= are counts of its unit; a struct's time field took numbers; dates are
midnight in a UTC column; the dotted columns= hint only for a struct's field; mixed units of
pandas Timestamps infer us; an empty append to a missing dataset is not_found."""

from __future__ import annotations

import datetime as dt
import json
import tarfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_an_empty_archive_among_others_is_skipped(tmp_path: Path, run: RunFn,
                                                  local_root: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a")
    run("commit", "shots", "--from", str(src))
    day = tmp_path / "day"
    day.mkdir()
    for n in ("n1", "n2"):
        (day / f"{n}.txt").write_text(n)
    with tarfile.open(tmp_path / "day-1.tar", "w") as t:
        for n in ("n1", "n2"):
            t.add(day / f"{n}.txt", arcname=f"{n}.txt")
    with tarfile.open(tmp_path / "day-2.tar", "w"):
        pass
    r = run("append", "shots", "--from", str(tmp_path / "day-1.tar"), "--from",
            str(tmp_path / "day-2.tar"), "--allow-empty")
    assert "skipped 1 empty archive" in r.err and "appended to shots@" in r.out
    assert dl.Repository.open(local_root).dataset("shots").num_rows == 3
    with tarfile.open(tmp_path / "day-3.tar", "w"):
        pass
    both_empty = run("append", "shots", "--from", str(tmp_path / "day-2.tar"), "--from",
                     str(tmp_path / "day-3.tar"), "--json", rc=1)
    error = json.loads(both_empty.err.strip().splitlines()[-1])["error"]
    assert error["kind"] == "empty_input" and "no files in any of its 2 archives" in (
        error["message"])


def test_an_empty_append_to_a_missing_dataset_is_not_found(tmp_path: Path, run: RunFn) -> None:
    (tmp_path / "e").mkdir()
    r = run("append", "nope", "--from", str(tmp_path / "e"), "--json", rc=1)
    error = json.loads(r.err.strip().splitlines()[-1])["error"]
    assert error["kind"] == "not_found" and "--allow-empty" not in error["message"]


def test_numbers_go_into_time_columns_of_a_commit_schema(repo: dl.Repository) -> None:
    schema = pa.schema([("__key__", pa.string()), ("ts", pa.timestamp("s"))])
    repo.commit("t", pa.table({"__key__": ["a"], "ts": pa.array([1700000000], pa.int64())}),
                schema=schema)
    repo.commit("p", [("a", {"ts": 1700000000})], schema=schema)
    for name in ("t", "p"):
        assert repo.dataset(name).get("a")["ts"] == dt.datetime(2023, 11, 14, 22, 13, 20)
    with pytest.raises(dl.SchemaError, match="is a number"):  # an append: the unit is not said
        repo.append("p", [("b", {"ts": 1700000060})])


def test_a_struct_time_field_refuses_numbers(repo: dl.Repository) -> None:
    repo.commit("n", [("a", {"ev": {"when": dt.datetime(2024, 1, 1)}, "l": [
        {"when": dt.datetime(2024, 1, 1)}]})])
    with pytest.raises(dl.SchemaError, match=r"holds a number at ev\.when, but that field"):
        repo.append("n", [("b", {"ev": {"when": 1700000000}, "l": []})])
    with pytest.raises(dl.SchemaError, match=r"holds a number at l\[\]\.when"):
        repo.append("n", [("b", {"ev": None, "l": [{"when": 1700000000}]})])
    table = pa.table({"__key__": ["c"], "ev": pa.array([{"when": 1700000000}],
                                                       pa.struct([("when", pa.int64())])),
                      "l": pa.array([[]], pa.list_(pa.struct([("when", pa.int64())])))})
    with pytest.raises(dl.SchemaError, match=r"its values at \.when are numbers"):
        repo.append("n", table)
    assert repo.dataset("n").num_rows == 1


def test_dates_go_into_a_utc_column_as_midnight(repo: dl.Repository) -> None:
    repo.commit("u", pd.DataFrame({"k": ["a"], "ts": [pd.Timestamp("2024-01-01", tz="UTC")]}),
                key="k")
    repo.append("u", pa.table({"k": ["b"], "ts": pa.array([dt.date(2024, 1, 2)], pa.date32())}),
                key="k")
    assert repo.dataset("u").get("b")["ts"] == dt.datetime(2024, 1, 2, tzinfo=dt.UTC)


def test_the_dotted_hint_only_for_a_struct_field(repo: dl.Repository) -> None:
    repo.commit("m", pa.table({"__key__": ["a"], "meta": [{"score": 1}], "label": [1]}))
    ds = repo.dataset("m")
    with pytest.raises(dl.SchemaError, match="is a field of the column 'meta'"):
        ds.to_arrow(columns=["meta.score"])
    for name in ("label.x", "meta.nope"):
        with pytest.raises(dl.SchemaError) as e:
            ds.to_arrow(columns=[name])
        assert "is a field of" not in str(e.value)


def test_timestamps_of_mixed_units_infer_microseconds(repo: dl.Repository) -> None:
    old = pd.Timestamp(dt.datetime(1600, 1, 1))  # before 1677: no ns
    assert old.unit != "ns"
    repo.commit("x", [("a", {"t": pd.Timestamp("2024-01-01").as_unit("ns")}), ("b", {"t": old})])
    assert repo.dataset("x").schema.field("t").type == pa.timestamp("us")
