"""CLI QA round 10: Ctrl-C stops a running SQL query with exit 130, rm --json keeps its
question off stdout, cache status works while the root cannot be reached, a blank root is
refused, demo --json names its root, status names R2_ACCOUNT_ID, init takes UNLIMITED."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl

DLOAD = str(Path(sys.executable).with_name("dload"))


def test_ctrl_c_stops_a_running_sql_query_at_once(local_root: str) -> None:
    dl.Repository.open(local_root).commit("ds", [("a", {"x": 1})], progress=False)
    query = "select count(*) from range(100000000000) t(x) where x % 7 = 3"
    p = subprocess.Popen([DLOAD, "sql", query, "--root", local_root],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # started: the query would take minutes
    p.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "dload: interrupted" and "Traceback" not in err
    assert time.monotonic() - sent < 30  # not when the query would have ended


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_rm_json_asks_on_stderr(local_root: str, tmp_path: Path) -> None:
    import pty

    dl.Repository.open(local_root).commit("ds", [("a", {"x": 1})], progress=False)
    leader, follower = pty.openpty()
    p = subprocess.Popen([DLOAD, "rm", "ds", "--json", "--root", local_root], stdin=follower,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.write(leader, b"y\n")
    out, err = p.communicate(timeout=60)
    os.close(leader)
    os.close(follower)
    assert p.returncode == 0, err
    assert json.loads(out)["name"] == "ds" and "remove dataset 'ds'" in err


def test_cache_status_shows_the_local_cache_when_the_root_cannot_be_reached(
        s3_root: str) -> None:
    env = {**os.environ, "DLOAD_ENDPOINT_URL": "http://127.0.0.1:9"}  # nothing listens there
    p = subprocess.run([DLOAD, "cache", "status", "--json", "--root", s3_root], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert "cache_dir" in got and got["error"] and "warning:" in p.stderr


def test_a_blank_root_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DLOAD_ROOT", raising=False)
    monkeypatch.setenv("DLOAD_ROOT", " ")
    monkeypatch.chdir(tmp_path)
    p = subprocess.run([DLOAD, "ls"], capture_output=True, text=True, env=dict(os.environ))
    assert p.returncode == 1 and "root is empty (from env DLOAD_ROOT: ' ')" in p.stderr, p.stderr
    assert not (tmp_path / " ").exists()


def test_demo_json_names_its_root_and_status_names_r2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "demo-root")
    p = subprocess.run([DLOAD, "demo", "--json", "--root", root, "--samples", "40",
                        "--steps", "2"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["root"] == {"value": root, "source": "argument"}
    env = {k: v for k, v in os.environ.items() if k != "DLOAD_ENDPOINT_URL"}
    s = subprocess.run([DLOAD, "status", "--json", "--root", root],
                       env={**env, "R2_ACCOUNT_ID": "acc"}, capture_output=True, text=True)
    endpoint = json.loads(s.stdout)["settings"]["endpoint_url"]
    assert endpoint["source"] == "env R2_ACCOUNT_ID", endpoint


def test_init_takes_budget_words_in_any_case(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    p = subprocess.run([DLOAD, "init", "--project", "--cache-budget", "UNLIMITED"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "cache_budget" in (tmp_path / "dload.toml").read_text()
    bad = subprocess.run([DLOAD, "init", "--project", "--cache-budget", "lots"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "'auto'" in bad.stderr and "'unlimited'" in bad.stderr


def test_sql_text_shows_blobs_and_intervals_inside_lists_and_structs(
        run: RunFn, local_root: str) -> None:
    dl.Repository.open(local_root).commit("ds", [("a", {"x": 1})], progress=False)
    out = run("sql", "select [blob 'ab', blob 'c'] as bl, {'a': interval 1 day, 'b': 'x'} "
                     "as st, ['a', NULL] as s").out
    assert "[<2 B>, <1 B>]" in out and "{'a': 1 day, 'b': 'x'}" in out
    assert "['a', None]" in out and "b'ab'" not in out
