"""The `dload` script ends with its output flushed and without the interpreter's shutdown,
where native threads torn down with the interpreter once aborted a command that had succeeded
(see dload_arrow/cli/entry.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dload_arrow import Repository

_DLOAD = str(Path(sys.executable).with_name("dload"))


def _env_with_exit_probe(tmp_path: Path) -> dict[str, str]:
    """An environment whose interpreter, on a normal shutdown, writes ``shutdown-ran``."""
    site = tmp_path / "site"
    site.mkdir()
    probe = tmp_path / "shutdown-ran"
    (site / "sitecustomize.py").write_text(
        "import atexit\n"
        f"atexit.register(lambda: open({str(probe)!r}, 'w').close())\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def test_the_script_prints_all_of_a_long_answer_into_a_pipe_and_skips_the_shutdown(
        tmp_path: Path) -> None:
    root = tmp_path / "r"
    Repository.open(root).commit("d", [(f"k{i:05d}", {"x": i, "t": "v" * 50})
                                       for i in range(5000)], progress=False)
    env = _env_with_exit_probe(tmp_path)
    p = subprocess.run([_DLOAD, "head", "d", "-n", "5000", "--json", "--root", str(root)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()] if not p.stdout.startswith(
        "[") else json.loads(p.stdout)
    assert [r["x"] for r in rows] == list(range(5000))  # nothing lost in the pipe's buffer
    assert not (tmp_path / "shutdown-ran").exists()  # os._exit: no atexit, no native teardown


def test_the_scripts_exit_codes_and_errors_still_come_through(tmp_path: Path) -> None:
    env = _env_with_exit_probe(tmp_path)
    p = subprocess.run([_DLOAD, "head", "nosuch", "--root", str(tmp_path / "r")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1
    assert p.stderr.startswith("dload: error:") and "nosuch" in p.stderr
    # the sitecustomize probe ran (it is imported): the shutdown it hooks did not
    assert not (tmp_path / "shutdown-ran").exists()


def test_the_script_leaves_no_duckdb_spill_files_behind(tmp_path: Path) -> None:
    Repository.open(tmp_path / "r").commit("a", [("k", {"x": 1})], progress=False)
    query = ("SET memory_limit='30MB'; SET threads=1; SELECT count(*) AS n FROM (SELECT "
             "md5(range::VARCHAR) m FROM range(1500000) ORDER BY m)")  # spills to disk
    p = subprocess.run([_DLOAD, "sql", query, "--json", "--root", str(tmp_path / "r")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [{"n": 1500000}]
    assert not (tmp_path / ".tmp").exists()  # DuckDB's spill folder, removed as it closed


def test_python_m_runs_the_console_script_path() -> None:
    # QA review59h: `python -m dload_arrow.cli` ended through the interpreter's shutdown, where
    # a native thread still inside Arrow now and then aborted a finished command (exit 134)
    import subprocess
    import sys

    code = ("import runpy, dload_arrow.cli.entry as e; e.console = lambda: print('console'); "
            "runpy.run_module('dload_arrow.cli', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "console", out.stderr
