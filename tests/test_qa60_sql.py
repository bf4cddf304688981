"""QA sql60: SQL analysts' runs: a query opening with a comment, a time limit on a query."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest

import dload_arrow as dl


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    r = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    r.commit("users", [(f"u{i}", {"age": 20 + i}) for i in range(5)], progress=False)
    return r


def test_dload_sql_takes_a_query_opening_with_a_comment(repo: dl.Repository,
                                                        tmp_path: Path) -> None:
    from test_cli import dload

    args = ["--root", repo.storage.url, "--cache-dir", str(tmp_path / "c")]
    out = dload("sql", "-- rows per dataset\nselect name, num_rows from datasets", "--json",
                *args, cwd=tmp_path).out
    assert json.loads(out) == [{"name": "users", "num_rows": 5}]
    query = (Path(__file__).parents[1] / "sql" / "queries" / "dataset_versions.sql").read_text()
    assert query.startswith("--")
    got = json.loads(dload("sql", query, "--param", "name=users", "--json", *args,
                           cwd=tmp_path).out)
    assert len(got) == 1 and got[0]["num_rows"] == 5
    err = dload("sql", "select 1", "--limt", "3", *args, cwd=tmp_path, rc=1).err
    assert "No such option '--limt'" in err  # a misspelt option is still named


def test_a_query_stopped_by_a_time_limit_stops_and_frees_the_connection(
        repo: dl.Repository) -> None:
    """A TimeoutError from a signal handler left the query running, and every later
    repo.sql() failed "connection is busy"."""
    def on_alarm(*_: object) -> None:
        raise TimeoutError("query took too long")

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        for _ in range(3):
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            t0 = time.monotonic()
            with pytest.raises(TimeoutError):
                repo.sql("select count(*) from range(100000000000) a where a.range % 7 = 3")
            assert time.monotonic() - t0 < 10
            assert not [t for t in threading.enumerate() if t.name == "dload-sql"]
            assert repo.sql("select count(*) as n from samples('users')").column(
                "n").to_pylist() == [5]  # at once, no "connection is busy"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_review60f_an_option_with_a_value_holding_spaces_stays_an_option(
        repo: dl.Repository, tmp_path: Path) -> None:
    from test_cli import dload

    args = ["--root", repo.storage.url, "--cache-dir", str(tmp_path / "c")]
    out = dload("sql", "select $n as n", "--param=n=big users", "--json", *args,
                cwd=tmp_path).out
    assert json.loads(out) == [{"n": "big users"}]


def test_sql60_a_param_given_twice_is_refused(repo: dl.Repository, tmp_path: Path) -> None:
    from test_cli import dload

    args = ["--root", repo.storage.url, "--cache-dir", str(tmp_path / "c")]
    err = dload("sql", "select $n as n", "--param", "n=1", "--param", "n=2", *args,
                cwd=tmp_path, rc=1).err
    assert "'n' is given twice (n=1 and n=2)" in err
    err = dload("sql", "select * from samples('users', '')", *args, cwd=tmp_path, rc=1).err
    assert "is empty" in err and "pass None" not in err
