"""`dload commit --exclude/--include`: the files the globs leave out are counted and named, and
a commit they leave nothing to says which globs did it and how to fix them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from cli_run import RunFn, runner


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (tmp_path / "d" / name).write_text(name)
    return tmp_path / "d"


def test_excluding_every_file_says_what_the_globs_left_out(run: RunFn, tree: Path) -> None:
    r = run("commit", "x", "--from", str(tree), "--exclude", "**", rc=1)
    assert r.err == (
        f"dload: error: {tree}: no files to ingest: --exclude '**' (include=/exclude= in "
        "Python) left out every file there (2 files and 1 folder (sub/)); loosen the globs (a "
        "pattern matches a file's path, its name or a directory on its path; '*' matches "
        "every file)\n")


def test_excluding_every_entry_of_a_zip_counts_them(run: RunFn, tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as zf:
        for name in ("a.txt", "b.txt", "sub/c.txt"):
            zf.writestr(name, name)
    r = run("commit", "x", "--from", str(tmp_path / "z.zip"), "--exclude", "*", rc=1)
    assert "--exclude '*' (include=/exclude= in Python) left out every file there (3 files)" \
        in r.err


def test_a_commit_reports_the_files_the_globs_left_out(run: RunFn, tree: Path) -> None:
    r = run("commit", "x", "--from", str(tree), "--exclude", "a.txt", "--exclude", "sub")
    assert "not read: 1 file and 1 folder (sub/), left out by --include/--exclude" in r.err
    r = run("commit", "y", "--from", str(tree), "--exclude", "a.txt", "--json")
    assert r.json["rows"] == 2
    assert (r.json["source"]["excluded"], r.json["source"]["excluded_dirs"]) == (1, [])
