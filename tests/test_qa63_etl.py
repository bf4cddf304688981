"""QA etl63: scheduled ingestion with the CLI. A rerun of an append that published is its
own error kind (`keys_stored`), a file-size limit on a local root is named as such, and
SIGTERM stops a command as Ctrl-C does (`dload: terminated`, exit 143)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_rerun_append_is_keys_stored_not_schema(tmp_path: Path, run: RunFn) -> None:
    (tmp_path / "day1.csv").write_text("id,value\nd1_0,1\nd1_1,2\n")
    (tmp_path / "day2.csv").write_text("id,value\nd2_0,3\n")
    (tmp_path / "day3.csv").write_text("id,value,extra\nd3_0,5,x\n")
    run("commit", "ev", "--from", str(tmp_path / "day1.csv"), "--key-column", "id")
    run("append", "ev", "--from", str(tmp_path / "day2.csv"), "--key-column", "id")
    again = run("append", "ev", "--from", str(tmp_path / "day2.csv"), "--key-column", "id",
                "--json", rc=1).err
    error = json.loads(again.strip().splitlines()[-1])["error"]
    assert error["kind"] == "keys_stored" and error["type"] == "KeysStoredError"
    assert "nothing to do" in error["message"]
    other = run("append", "ev", "--from", str(tmp_path / "day3.csv"), "--key-column", "id",
                "--json", rc=1).err
    assert json.loads(other.strip().splitlines()[-1])["error"]["kind"] == "schema"
    assert issubclass(dl.KeysStoredError, dl.SchemaError)


def _small_files() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))


def test_a_file_size_limit_on_a_local_root_is_no_full_disk(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for i in range(3):
        (tmp_path / "in" / f"f{i}.bin").write_bytes(os.urandom(50_000))
    out = subprocess.run([sys.executable, "-m", "dload_arrow.cli.main", "commit", "big",
                          "--from", str(tmp_path / "in"), "--root", str(tmp_path / "root"),
                          "--cache-dir", str(tmp_path / "cache")],
                         capture_output=True, text=True, timeout=120, preexec_fn=_small_files)
    assert out.returncode == 1, out.stderr
    assert "ulimit -f" in out.stderr and "no room on its disk" not in out.stderr


def test_sigterm_stops_a_command_as_ctrl_c_does(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", "from dload_arrow.cli.entry import console; "
                             "console()", "sql", "select sum(hash(a)) from range(30000000000) a",
                             "--root", str(tmp_path / "root")],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "dload: terminated" in err, err
