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


def test_hidden_files_are_not_counted_as_left_out_by_the_globs(run: RunFn, tree: Path) -> None:
    (tree / ".DS_Store").write_bytes(b"\0")
    r = run("commit", "x", "--from", str(tree), "--include", "a.txt", "--json")
    assert r.json["source"]["excluded"] == 2  # b.txt and sub/c.txt; .DS_Store is never read
    r = run("commit", "y", "--from", str(tree), "--include", "*.csv", rc=1)
    assert "left out every file there (3 files)" in r.err


@pytest.mark.parametrize("pattern", ["link.txt", "/link.txt", "linkdir", "linkdir/",
                                     ".git"])
def test_excluding_a_link_or_hidden_folder_ingest_skips_anyway_is_no_unused_glob(
        run: RunFn, tree: Path, tmp_path: Path, pattern: str) -> None:
    (tmp_path / "secret.txt").write_text("s")
    (tree / "link.txt").symlink_to(tmp_path / "secret.txt")
    (tree / "linkdir").symlink_to(tree / "sub")
    (tree / ".git").mkdir()
    (tree / "a.jpg").write_bytes(b"a")
    r = run("commit", "x", "--from", str(tree), "--exclude", pattern, "--json")
    assert r.json["source"]["unused_globs"] == []
    assert "warning" not in r.err
    r = run("commit", "y", "--from", str(tree), "--exclude", "nothing", "--json")
    assert len(r.json["source"]["unused_globs"]) == 1


def test_excluding_a_hidden_folder_of_a_table_folder_is_no_unused_glob(
        run: RunFn, tmp_path: Path) -> None:
    (tmp_path / "t" / "_tmp").mkdir(parents=True)
    (tmp_path / "t" / "a.csv").write_text("id,v\n1,2\n")
    r = run("commit", "x", "--from", str(tmp_path / "t"), "--exclude", "_tmp")
    assert "warning" not in r.err


def test_zoned_json_lines_times_append_to_a_column_stored_without_a_zone(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    import datetime as dt

    import pyarrow as pa

    from dload_arrow import Repository

    repo = Repository.open(local_root)  # as JSON Lines were stored before December 2026
    repo.commit("ev", pa.table({"__key__": ["1"], "t": pa.array(
        [dt.datetime(2024, 1, 1, 8)], pa.timestamp("s"))}), progress=False)
    (tmp_path / "d.jsonl").write_text('{"id": "2", "t": "2024-01-01T10:00:00+02:00"}\n')
    run("append", "ev", "--from", str(tmp_path / "d.jsonl"), "--key-column", "id")
    got = repo.dataset("ev").to_arrow()
    assert got.schema.field("t").type == pa.timestamp("s")
    assert got["t"].to_pylist() == [dt.datetime(2024, 1, 1, 8)] * 2  # 10:00+02:00 is 08:00 UTC
