"""QA tabular60: a feature store's tables moved into dload_arrow."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import dload_arrow as dl
from dload_arrow.errors import PredicateError, SchemaError


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")


def test_pandas_period_and_interval_columns_are_refused_with_the_conversion(
        repo: dl.Repository) -> None:
    """Stored as int64 ordinals, a Period read back elsewhere as 648, 649, 650."""
    month = pd.DataFrame({"month": pd.period_range("2024-01", periods=3, freq="M")})
    with pytest.raises(SchemaError, match=r"'month' is a pandas Period \(period\[M\]\).*"
                       r"df\['month'\]\.dt\.to_timestamp\(\)"):
        repo.commit("f", month, progress=False)
    bucket = pd.DataFrame({"b": pd.interval_range(0, 3)})
    with pytest.raises(SchemaError, match=r"'b' is a pandas Interval.*astype\(str\)"):
        repo.commit("f", bucket, progress=False)
    assert repo.datasets() == []
    fixed = pd.DataFrame({"month": month["month"].dt.to_timestamp(),
                          "b": bucket["b"].astype(str)})
    repo.commit("f", fixed, progress=False)
    out = subprocess.run(  # another process reads the same values
        [sys.executable, "-c", "import dload_arrow as dl, sys; r = dl.Repository.open("
         "sys.argv[1]); print(r.dataset('f').to_pandas()['month'].dt.strftime('%Y-%m')"
         ".tolist(), r.dataset('f').to_pandas()['b'].tolist())", repo.storage.url],
        capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['2024-01', '2024-02', '2024-03'] ['(0, 1]', '(1, 2]', '(2, 3]']"


def test_a_categorical_of_integers_is_stored_as_its_values_with_a_warning(
        repo: dl.Repository) -> None:
    df = pd.DataFrame({"zip": pd.Categorical([10115, 80331, 10115]),
                       "s": pd.Categorical(["a", "b", "a"])})
    with pytest.warns(UserWarning, match=r"'zip' is a categorical of int64 values.*"
                      r"astype\('category'\)") as rec:
        repo.commit("f", df, progress=False)
    assert not any("'s'" in str(w.message) for w in rec)  # strings stay categories
    out = repo.dataset("f").to_pandas()
    assert str(out["zip"].dtype) == "int64" and str(out["s"].dtype) == "category"


def test_an_append_of_finer_times_names_the_value_and_a_lossless_fix(
        repo: dl.Repository, tmp_path: Path) -> None:
    from test_cli import dload

    (tmp_path / "day1.csv").write_text("id,ts\n1,2024-01-01 00:00:00\n2,2024-01-01 00:00:01\n")
    (tmp_path / "day2.csv").write_text("id,ts\n3,2024-01-02 00:00:00.250\n")
    args = ["--root", repo.storage.url, "--cache-dir", str(tmp_path / "c"), "--key-column", "id"]
    dload("commit", "ev", "--from", str(tmp_path / "day1.csv"), *args, cwd=tmp_path)
    err = dload("append", "ev", "--from", str(tmp_path / "day2.csv"), *args, cwd=tmp_path,
                rc=1).err
    assert "finer than whole seconds (2024-01-02 00:00:00.250000)" in err
    assert "Cast the column to timestamp[s]" not in err
    t = repo.dataset("ev").to_arrow()  # the fix the message gives, as written there
    repo.commit("ev", t.set_column(t.schema.get_field_index("ts"), "ts",
                                   t["ts"].cast("timestamp[ns]")), progress=False)
    dload("append", "ev", "--from", str(tmp_path / "day2.csv"), *args, cwd=tmp_path)
    assert repo.dataset("ev").num_rows == 3


def test_a_struct_field_in_where_points_at_sql_and_filter(repo: dl.Repository) -> None:
    repo.commit("f", pd.DataFrame({"prof": [{"age": 30}, {"age": 50}]}), progress=False)
    ds = repo.dataset("f")
    for text in ("prof.age > 40", '"prof.age" > 40', '"prof"."age" > 40'):
        with pytest.raises(PredicateError, match=r"not a field of 'prof'.*WHERE prof\.age.*"
                           r"r\['prof'\]\['age'\]"):
            ds.where(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        n = repo.sql("select count(*) as n from samples('f') where prof.age > 40")
    assert n.column("n").to_pylist() == [1]
    with pytest.raises(PredicateError) as e:  # not a column before the dot: the usual advice
        ds.where("other.age > 40")
    assert "not a field" not in str(e.value)


def test_to_pandas_nullable_gives_one_dtype_whatever_rows_are_read(repo: dl.Repository
                                                                   ) -> None:
    day1 = pd.DataFrame({"day": ["d1"] * 3, "cnt": pd.array([1, 2, 3], dtype="Int64"),
                         "ok": pd.array([True, False, True], dtype="boolean")})
    day2 = pd.DataFrame({"day": ["d2"] * 3, "cnt": pd.array([4, None, 6], dtype="Int64"),
                         "ok": pd.array([None, False, True], dtype="boolean")})
    repo.commit("f", day1, progress=False)
    repo.append("f", day2, progress=False)
    ds = repo.dataset("f")
    one = ds.where("day = 'd1'")
    assert str(one.to_pandas()["cnt"].dtype) == "int64"  # the default: numpy without nulls
    for view in (one, ds.where("day = 'd2'")):
        got = view.to_pandas(nullable=True)
        assert (str(got["cnt"].dtype), str(got["ok"].dtype)) == ("Int64", "boolean")
    assert ds.where("day = 'd1'").to_pandas(nullable=True)["cnt"].tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="nullable"):
        ds.to_pandas(nullable="yes")  # type: ignore[arg-type]


def test_review60b_period_in_a_pandas_parquet_file_and_tz_times(repo: dl.Repository,
                                                                tmp_path: Path) -> None:
    """QA review60b: a Period in a file pandas wrote (read without pandas' registration: an
    int64 with extension metadata) was stored as ordinals; the finer-times fix failed for a
    zoned column; a time out of range was called finer."""
    import datetime as dt

    import pyarrow as pa

    path = tmp_path / "pi.parquet"
    subprocess.run([sys.executable, "-c", "import pandas as pd, sys; pd.DataFrame({'p': "
                    "pd.period_range('2024-01', periods=3, freq='M')}).to_parquet(sys.argv[1])",
                    str(path)], check=True)
    out = subprocess.run([sys.executable, "-c", "import sys, pyarrow.parquet as pq, "
                          "dload_arrow as dl\ntry:\n dl.Repository.open(sys.argv[1]).commit("
                          "'m', pq.read_table(sys.argv[2]), progress=False)\nexcept "
                          "dl.SchemaError as e: print(e)", repo.storage.url, str(path)],
                         capture_output=True, text=True, check=True).stdout
    assert "'p' is a pandas Period (period[M])" in out
    utc = dt.UTC
    repo.commit("tz", pa.table({"t": pa.array([dt.datetime(2024, 1, 1, tzinfo=utc)],
                                              pa.timestamp("s", "UTC"))}), progress=False)
    finer = pa.table({"t": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 250000, tzinfo=utc)],
                                    pa.timestamp("ms", "UTC"))})
    with pytest.raises(SchemaError) as e:
        repo.append("tz", finer, progress=False)
    fix = str(e.value).split("e.g. ")[1].split(", then append")[0]
    exec(fix.replace("; repo.commit", "\nrepo.commit"), {"repo": repo})  # as written
    repo.append("tz", finer, progress=False)
    assert repo.dataset("tz").num_rows == 2
    repo.commit("ns", pa.table({"t": pa.array([1], pa.timestamp("ns"))}), progress=False)
    far = pa.table({"t": pa.array([dt.datetime(9999, 12, 31)], pa.timestamp("us"))})
    with pytest.raises(SchemaError) as e:
        repo.append("ns", far, progress=False)
    assert "finer than" not in str(e.value)


def test_review60b_a_dotted_column_name_gets_the_quoting_hint(repo: dl.Repository) -> None:
    repo.commit("f", [("a", {"loss": 1.0, "loss.val": 3.0})], progress=False)
    with pytest.raises(PredicateError, match=r'"loss\.val"') as e:
        repo.dataset("f").where("loss.val > 2")
    assert "not a field" not in str(e.value)
    assert repo.dataset("f").where('"loss.val" > 2').num_rows == 1
