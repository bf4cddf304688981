"""`dload` CLI findings of the third QA pass: output that lost columns, flags that were
silently ignored, and errors that did not say what to do.

Every check runs `main()` in this process (a subprocess per command would import pyarrow).
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import RunFn, runner
from test_ingest import make_tree

from dload_arrow import Repository


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


# --- 1. duplicate column names in `dload sql` ---------------------------------------------

def test_sql_keeps_every_column_when_names_repeat(run: RunFn, tmp_path: Path) -> None:
    run("commit", "t", "--from", str(make_tree(tmp_path / "a", {"x.txt": "1", "y.txt": "2"})))
    q = "select 1 as n, 2 as n, 3 as n_1"
    got = run("sql", q, "--json").json
    assert got == [{"n": 1, "n_2": 2, "n_1": 3}]
    rows = list(csv.reader(io.StringIO(run("sql", q, "--csv").out)))
    assert rows == [["n", "n_2", "n_1"], ["1", "2", "3"]]
    table = run("sql", q).out.splitlines()
    assert table[0].split() == ["n", "n_2", "n_1"] and table[1].split() == ["1", "2", "3"]


# --- 3. a Parquet folder with markers; --key-column on files -------------------------------

def test_spark_folder_with_success_marker_commits_as_a_table(run: RunFn, tmp_path: Path,
                                                             local_root: str) -> None:
    d = tmp_path / "spark"
    d.mkdir()
    t = pa.table({"id": [f"r{i}" for i in range(10)], "x": list(range(10))})
    pq.write_table(t.slice(0, 5), d / "part-00000.parquet")
    pq.write_table(t.slice(5), d / "part-00001.parquet")
    (d / "_SUCCESS").write_bytes(b"")
    (d / ".part-00000.parquet.crc").write_bytes(b"crc")
    (d / "README.md").write_text("events, one row each")
    r = run("commit", "events", "--from", str(d), "--key-column", "id", "--json")
    assert r.json["rows"] == 10 and r.json["source"]["kind"] == "table"
    assert sorted(r.json["source"]["ignored"]) == [".part-00000.parquet.crc", "README.md",
                                                   "_SUCCESS"]
    got = Repository.open(local_root).dataset("events").to_arrow()
    assert got.column("__key__").to_pylist() == [f"r{i}" for i in range(10)]


def test_key_column_on_a_files_folder_suggests_as_table(run: RunFn, tmp_path: Path) -> None:
    d = make_tree(tmp_path / "mixed", {"a.jpg": b"J", "t.parquet": b"not read"})
    r = run("commit", "x", "--from", str(d), "--key-column", "id", rc=1)
    assert "--key-column and --text-column are for tables" in r.err and "add --as table" in r.err


# --- 4. --include / --exclude / --split with tables ----------------------------------------

def test_table_folders_honour_include_and_exclude_and_refuse_split(run: RunFn,
                                                                   tmp_path: Path) -> None:
    d = tmp_path / "months"
    d.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "x": [1, 2]}), d / "2024-01.parquet")
    pq.write_table(pa.table({"id": ["c", "d"], "x": [3, 4]}), d / "2024-02.parquet")
    base = ("--from", str(d), "--key-column", "id", "--json")
    assert run("commit", "jan", *base, "--include", "2024-01*").json["rows"] == 2
    assert run("commit", "jan2", *base, "--exclude", "2024-02*").json["rows"] == 2
    assert run("commit", "all", *base).json["rows"] == 4
    r = run("commit", "none", *base, "--include", "2023-*", rc=1)
    assert "after --include/--exclude" in r.err
    r = run("commit", "s", *base, "--split", "first", rc=1)
    assert "--split is for files and archives" in r.err and "drop --split" in r.err


# --- 5. a file named x.__key__ -------------------------------------------------------------

def test_a_file_named_key_is_refused_in_one_line(run: RunFn, tmp_path: Path) -> None:
    d = make_tree(tmp_path / "d", {"x.txt": "hello", "x.__KEY__": "other"})
    r = run("commit", "k", "--from", str(d), rc=1)
    assert "'x.__KEY__'" in r.err and "--exclude '*.__KEY__'" in r.err
    z = tmp_path / "k.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x.txt", "hello")
        zf.writestr("x.__key__", "other")
    r = run("commit", "k", "--from", str(z), rc=1)
    assert "'x.__key__'" in r.err
    run("commit", "k", "--from", str(d), "--exclude", "*.__KEY__")


# --- 7 and 10. append ---------------------------------------------------------------------

def test_append_fills_columns_the_new_files_lack_and_names_extra_ones(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    first = make_tree(tmp_path / "a", {"p1.jpg": b"J1", "p1.json": "{}", "p2.jpg": b"J2",
                                    "p2.json": "{}"})
    run("commit", "photos", "--from", str(first))
    more = make_tree(tmp_path / "b", {"p3.jpg": b"J3"})  # no .json sidecar
    assert run("append", "photos", "--from", str(more), "--json").json["rows"] == 3
    t = Repository.open(local_root).dataset("photos").to_arrow()
    assert t.column("json").to_pylist() == ["{}", "{}", None]
    extra = make_tree(tmp_path / "c", {"p4.jpg": b"J4", "p4.txt": "caption"})
    r = run("append", "photos", "--from", str(extra), rc=1)
    assert "column(s) ['txt']" in r.err and "--exclude '*.txt'" in r.err
    assert "batch at row" not in r.err
    run("append", "photos", "--from", str(extra), "--exclude", "*.txt")


def test_append_of_a_keyless_table_numbers_its_rows_after_the_stored_ones(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    from dload_arrow import Repository

    (tmp_path / "a.csv").write_text("id,x\na,1\nb,2\n")
    (tmp_path / "b.csv").write_text("id,x\nc,3\n")
    run("commit", "t", "--from", str(tmp_path / "a.csv"))
    r = run("append", "t", "--from", str(tmp_path / "b.csv"), "--json")
    assert r.json["rows"] == 3
    keys = [s["__key__"] for s in Repository.open(local_root).dataset("t").samples()]
    assert keys == ["000000000000", "000000000001", "000000000002"]
    run("commit", "k", "--from", str(tmp_path / "a.csv"), "--key-column", "id")
    r = run("append", "k", "--from", str(tmp_path / "b.csv"), "--key-column", "id", "--json")
    assert r.json["rows"] == 3


# --- 9. --as that does not fit the path ----------------------------------------------------

def test_as_kind_that_does_not_fit_says_what_the_path_is(run: RunFn, tmp_path: Path) -> None:
    d = make_tree(tmp_path / "dir", {"a.txt": "x"})
    z = tmp_path / "a.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a.txt", "x")
    r = run("commit", "x", "--from", str(d), "--as", "archive", rc=1)
    assert "is a directory, not an archive" in r.err and "--as files" in r.err
    r = run("commit", "x", "--from", str(z), "--as", "files", rc=1)
    assert "is a file, not a directory" in r.err and "--as archive" in r.err


# --- 11. --param values are text ----------------------------------------------------------

def test_sql_params_bind_text_that_duckdb_converts(run: RunFn, tmp_path: Path) -> None:
    d = make_tree(tmp_path / "a", {"x.txt": "1"})
    run("commit", "2024", "--from", str(d))
    run("commit", "photos", "--from", str(d))
    q = "select name from datasets where name = $n"
    assert run("sql", q, "--param", "n=2024", "--json").json == [{"name": "2024"}]
    q = "select name from datasets where num_rows >= $n order by name"
    assert run("sql", q, "--param", "n=1", "--json").json == [{"name": "2024"},
                                                             {"name": "photos"}]
    q = "select name from datasets where list_contains($names, name)"
    assert run("sql", q, "--param", 'names=["photos"]', "--json").json == [{"name": "photos"}]
    q = "select name from datasets where name = $n"
    assert run("sql", q, "--param", 'n="2024"', "--json").json == [{"name": "2024"}]


# --- 13. a missing bucket in --from --------------------------------------------------------

def test_missing_bucket_in_from_names_the_input_not_the_root(
        run: RunFn, s3_root: str) -> None:
    r = run("commit", "x", "--from", "s3://no-such-bucket-qa3/in/data.zip", rc=1)
    assert "cannot read s3://no-such-bucket-qa3/in/data.zip" in r.err
    assert "bucket 'no-such-bucket-qa3' does not exist" in r.err
    assert "root" not in r.err


# --- 14. hidden directories ----------------------------------------------------------------

def test_hidden_directories_are_skipped_and_reported(run: RunFn, tmp_path: Path) -> None:
    d = make_tree(tmp_path / "d", {"cats/001.jpg": b"J", ".git/description": "x",
                                ".ipynb_checkpoints/notes-checkpoint.json": "{}"})
    r = run("commit", "x", "--from", str(d), "--json")
    assert r.json["rows"] == 1
    assert [s["name"] for s in r.json["source"]["skipped"]] == [".git/", ".ipynb_checkpoints/"]


# --- 17. demo step numbers -----------------------------------------------------------------

def test_demo_numbers_each_step_once(run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    out = run("demo", "--samples", "16").out
    steps = [line.split(".", 1)[0] for line in out.splitlines() if line[:1].isdigit()]
    assert steps == ["1", "2", "3", "4", "5", "6"], out
