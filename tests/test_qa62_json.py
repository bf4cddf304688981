"""QA json62: scripts reading --json. `cache status` keeps one key set whatever happened,
times are ISO 8601 with a T and durations seconds in every command's JSON, a prompt answered
no is a JSON error line, `rm` without --yes off a terminal is a usage error, and the unused
globs come as patterns too."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import RunFn, runner


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_cache_status_keeps_its_keys(tmp_path: Path, run: RunFn,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("x")
    run("commit", "t", "--from", str(tmp_path / "d"))
    fine = json.loads(run("cache", "status", "--json").out)
    assert fine["error"] is None and isinstance(fine["used_bytes"], int)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DLOAD_CACHE_DIR", str(tmp_path / "file"))
    broken = json.loads(run("cache", "status", "--json").out)
    assert set(broken) == set(fine)
    assert broken["used_bytes"] is None and "is a file, not a directory" in broken["error"]
    assert "cannot be used" in run("cache", "status").out
    assert set(json.loads(run("status", "--json").out)["cache"]) == set(fine)


def test_times_and_durations_read_alike_in_every_json(tmp_path: Path, run: RunFn) -> None:
    pq.write_table(pa.table({
        "id": ["a"], "ts": pa.array([10**15], pa.timestamp("us")),
        "dur": pa.array([1_500_000], pa.duration("us"))}), tmp_path / "t.parquet")
    run("commit", "types", "--from", str(tmp_path / "t.parquet"), "--key-column", "id")
    head = json.loads(run("head", "types", "--json").out)[0]
    assert head["ts"] == "2001-09-09T01:46:40" and head["dur"] == 1.5
    sql = json.loads(run("sql", "select ts from samples('types')", "--json").out)[0]
    assert sql["ts"] == head["ts"]
    version_time = json.loads(run("versions", "types", "--json").out)[0]["time"]
    created = json.loads(run("sql", "select created from versions", "--json").out)[0]
    assert created["created"] == version_time and "T" in version_time


def test_rm_refusals_are_json_usage_errors(tmp_path: Path, run: RunFn) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("x")
    run("commit", "t", "--from", str(tmp_path / "d"))
    err = run("rm", "t", "--json", rc=1).err  # no terminal, no --yes
    assert json.loads(err.strip().splitlines()[-1])["error"]["kind"] == "usage"


def test_unused_globs_come_as_patterns_too(tmp_path: Path, run: RunFn) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("x")
    out = json.loads(run("commit", "t", "--from", str(tmp_path / "d"), "--exclude", "nomatch",
                         "--json").out)
    assert out["source"]["unused_patterns"] == [{"option": "exclude", "pattern": "nomatch"}]
    pq.write_table(pa.table({"x": [1]}), tmp_path / "d" / "t.parquet")
    (tmp_path / "d" / "a.txt").unlink()
    table = json.loads(run("commit", "tab", "--from", str(tmp_path / "d"), "--exclude",
                           "zzz", "--json").out)
    assert table["source"]["unused_patterns"] == [{"option": "exclude", "pattern": "zzz"}]
