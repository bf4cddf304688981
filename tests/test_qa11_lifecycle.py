"""QA round "lifecycle2": rm's question, half-removed datasets, NAME@VERSION where rm wants
--version, removed versions asked for by full id."""

from __future__ import annotations

import io
import sys

import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rm_asks_with_where_latest_really_steps_back_after_a_rollback(
        run: RunFn, local_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repository.open(local_root)
    good = repo.commit("ds", {"a": {"x": b"good"}}, progress=False).version
    bad = repo.commit("ds", {"a": {"x": b"bad"}}, progress=False).version
    repo.commit("ds", {"a": {"x": b"good"}}, progress=False)  # a rollback to good
    more = repo.append("ds", {"b": {"x": b"more"}}, progress=False).version
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    r = run("rm", "ds", "--version", more)
    assert f"(latest moves from {more[:12]} to {good[:12]})" in r.out, r.out
    assert Repository.open(local_root).resolve("ds") == good != bad


def test_rm_and_unpin_of_name_at_version_give_the_cli_form(run: RunFn, local_root: str) -> None:
    v = Repository.open(local_root).commit("ds", {"a": {"x": b"1"}}, progress=False).version
    r = run("rm", f"ds@{v[:12]}", "--yes", rc=1)
    assert f"`dload rm ds --version {v[:12]}`" in r.err and "repo.dataset" not in r.err
    r = run("unpin", f"ds@{v[:12]}", rc=1)
    assert "`dload unpin ds`" in r.err
    assert Repository.open(local_root).versions("ds")  # nothing removed


def test_a_removed_version_named_by_its_full_id_says_who_removed_it(
        run: RunFn, local_root: str) -> None:
    repo = Repository.open(local_root)
    v1 = repo.commit("ds", {"a": {"x": b"1"}}, progress=False).version
    repo.commit("ds", {"a": {"x": b"2"}}, progress=False)
    repo.rm("ds", v1)
    for args in (["info", f"ds@{v1}"], ["verify", f"ds@{v1}"],
                 ["rm", "ds", "--version", v1, "--yes"]):
        r = run(*args, rc=1)
        assert f"version {v1[:12]} was removed by" in r.err, (args, r.err)
        assert f"`dload log ds@{v1[:12]}`" in r.err


def test_rm_warns_of_a_pin_written_as_a_short_id(run: RunFn, local_root: str, tmp_path: object,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    repo = Repository.open(local_root)
    v1 = repo.commit("ds", {"a": {"x": b"1"}}, progress=False).version
    repo.commit("ds", {"a": {"x": b"2"}}, progress=False)
    project = Path(str(tmp_path)) / "project"
    project.mkdir()
    (project / "dload.lock").write_text(f'[datasets]\nds = "{v1[:12]}"\n')  # typed by hand
    monkeypatch.chdir(project)
    r = run("rm", "ds", "--version", v1[:12], "--yes")
    assert f"pins ds to {v1[:12]}" in r.err and "dload unpin ds" in r.err
