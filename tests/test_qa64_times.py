"""QA timeseries64: numbers are not times. An int or float appended to a timestamp, date or
duration column was stored as a count of the column's unit (epoch seconds in January 1970);
a date appended to a zoned timestamp column was read as midnight UTC; pandas Timestamps of
unit ns were typed timestamp[us] from a first value without nanoseconds."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pandas as pd
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


@pytest.fixture
def repo(local_root: str) -> dl.Repository:
    return dl.Repository.open(local_root)


def test_numbers_into_time_columns_are_refused_as_samples(repo: dl.Repository) -> None:
    berlin = ZoneInfo("Europe/Berlin")
    repo.commit("t", [("r0", {"ts": dt.datetime(2023, 11, 14), "day": dt.date(2024, 1, 1),
                              "gap": dt.timedelta(seconds=5),
                              "zts": dt.datetime(2024, 1, 1, 12, tzinfo=berlin)})])
    for col, value, words in [("ts", 1700000060, "since 1970-01-01"), ("ts", 1.7e9, "timestamps"),
                              ("day", 19725, "days since 1970-01-01"),
                              ("gap", 5, "durations"), ("gap", 2.0, "durations"),
                              ("zts", 1704110400, "timestamps")]:
        with pytest.raises(dl.SchemaError, match=f"column '{col}': value .* is a number") as e:
            repo.append("t", [("r1", {"ts": None, "day": None, "gap": None, "zts": None,
                                      col: value})])
        assert words in str(e.value)
    # times as times still go in, and nothing was stored by the refusals
    repo.append("t", [("r2", {"ts": dt.datetime(2024, 1, 2), "day": dt.date(2024, 1, 2),
                              "gap": dt.timedelta(seconds=1),
                              "zts": dt.datetime(2024, 1, 2, tzinfo=berlin)})])
    assert [r["__key__"] for r in repo.dataset("t").samples()] == ["r0", "r2"]


def test_number_columns_into_time_columns_are_refused(repo: dl.Repository) -> None:
    repo.commit("s", pa.table({"k": ["a"], "ts": pa.array([dt.datetime(2023, 11, 14)],
                                                         pa.timestamp("us"))}), key="k")
    for table in (pa.table({"k": ["b"], "ts": pa.array([1700000120], pa.int64())}),
                  pd.DataFrame({"k": ["c"], "ts": [1700000180]}),
                  pa.table({"k": ["d"], "ts": pa.array([1.7e9], pa.float64())})):
        with pytest.raises(dl.SchemaError, match=r"its values are numbers .* stored as "
                                                  r"microseconds since 1970"):
            repo.append("s", table, key="k")
    repo.append("s", pa.table({"k": ["e"], "ts": pa.array([dt.date(2024, 1, 3)], pa.date32())}),
                key="k")  # a date into a naive timestamp column: its midnight, as before
    assert repo.dataset("s").get("e")["ts"] == dt.datetime(2024, 1, 3)
    assert repo.dataset("s").num_rows == 2


def test_dates_into_a_zoned_column_are_refused(repo: dl.Repository) -> None:
    first = pd.DataFrame({"k": ["a"], "ts": [pd.Timestamp("2024-01-01", tz="Europe/Berlin")]})
    repo.commit("daily", first, key="k")
    dates = pa.table({"k": ["c"], "ts": pa.array([dt.date(2024, 1, 3)], pa.date32())})
    with pytest.raises(dl.SchemaError, match=r"are dates .* in Europe/Berlin; Arrow would read "
                                              r"each as midnight UTC"):
        repo.append("daily", dates, key="k")
    assert repo.dataset("daily").num_rows == 1


def test_a_csv_of_epoch_seconds_is_refused_by_the_cli(tmp_path: Path, local_root: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run: RunFn = runner(capsys, ["--root", local_root])
    (tmp_path / "day1.csv").write_text("id,ts,v\nb1,2024-01-02 10:00:00.250,1.0\n")
    (tmp_path / "day2.csv").write_text("id,ts,v\nf1,1704412800,1.0\n")
    run("commit", "sensor", "--from", str(tmp_path / "day1.csv"), "--key-column", "id")
    r = run("append", "sensor", "--from", str(tmp_path / "day2.csv"), "--key-column", "id",
            "--json", rc=1)
    error = json.loads(r.err.strip().splitlines()[-1])["error"]
    assert error["kind"] == "schema" and "its values are numbers (int64)" in error["message"]
    assert "pd.to_datetime(col, unit='s')" in error["message"]


def test_nanosecond_timestamps_keep_their_unit_through_samples(repo: dl.Repository) -> None:
    ts = pa.array([1_700_000_000_000_000_000, 1_700_000_060_000_000_001], pa.timestamp("ns"))
    repo.commit("src", pa.table({"k": ["a", "b"], "ts": ts}), key="k")
    src = repo.dataset("src")
    repo.derive("dst", src.pipeline().map(lambda r: {"__key__": r["__key__"], "ts": r["ts"]}))
    repo.commit("dst2", src.samples())
    for name in ("dst", "dst2"):
        got = repo.dataset(name)
        assert got.schema.field("ts").type == pa.timestamp("ns")
        assert got.to_arrow().column("ts").combine_chunks().equals(ts)


def test_where_on_a_duration_says_how_to_filter_it(repo: dl.Repository) -> None:
    """QA timeseries64 (F5): where() refused every comparison on a duration column, naming
    no way to filter on it; SQL over samples() compares it as a count of its unit."""
    gaps = pa.array([dt.timedelta(seconds=1), dt.timedelta(seconds=9)], pa.duration("ms"))
    repo.commit("gaps", pa.table({"k": ["a", "b"], "gap": gaps}), key="k")
    with pytest.raises(dl.PredicateError, match=r"a duration is compared in SQL, as a count "
                                                r"of its unit \(ms\)"):
        repo.dataset("gaps").where("gap > 5000")
    got = repo.sql("SELECT __key__ FROM samples('gaps') WHERE gap > 5000")
    assert got.column("__key__").to_pylist() == ["b"]
    assert repo.dataset("gaps").where("gap IS NOT NULL").num_rows == 2
