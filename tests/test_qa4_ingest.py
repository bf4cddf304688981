"""Ingestion findings of the fourth QA pass: globs naming a directory, globs that match nothing,
case-insensitive extensions in globs, an --as that does not fit, a misnamed archive, an
archive holding an entry twice, and an append that forgot --key-column."""

from __future__ import annotations

import io
import re
import tarfile
import warnings
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import RunFn, runner
from test_ingest import make_tree

import dload_arrow as dl
from dload_arrow import ConfigError, Repository, SchemaError
from dload_arrow.ingest import GlobWarning, open_archive, open_source, open_table


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def photos(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "photos", {
        "cats/001.jpg": b"c1", "cats/002.jpg": b"c2", "cats/002.txt": "two",
        "dogs/001.jpg": b"d1", "UPPER.JPG": b"U", "notes.txt": "n",
    })


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _tar(path: Path, files: list[tuple[str, bytes]], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


# --- C2. a glob naming a directory; globs that match nothing; extensions in globs -----------

@pytest.mark.parametrize("pattern", ["cats", "cats/", "cats/*", "./cats"])
def test_excluding_a_directory_by_name_leaves_out_everything_under_it(
        photos: Path, pattern: str) -> None:
    assert open_source(str(photos), exclude=[pattern]).keys() == ["UPPER", "dogs/001", "notes"]


def test_including_a_directory_takes_only_what_is_under_it(photos: Path) -> None:
    assert open_source(str(photos), include=["cats/"]).keys() == ["cats/001", "cats/002"]


def test_a_directory_glob_matches_at_any_depth_and_a_trailing_slash_only_directories(
        tmp_path: Path) -> None:
    d = make_tree(tmp_path / "d", {"a/tmp/x.jpg": b"1", "tmp.jpg": b"2", "b/y.jpg": b"3"})
    assert open_source(str(d), exclude=["tmp"]).keys() == ["b/y", "tmp"]
    with pytest.warns(GlobWarning, match="--exclude 'tmp.jpg/'"):  # tmp.jpg is a file
        assert open_source(str(d), exclude=["tmp.jpg/"]).keys() == ["a/tmp/x", "b/y", "tmp"]


def test_include_star_jpg_takes_upper_case_extensions_as_the_jpg_column(photos: Path) -> None:
    src = open_source(str(photos), include=["*.jpg"])
    assert src.keys() == ["UPPER", "cats/001", "cats/002", "dogs/001"]
    assert src.report.columns == {"jpg": 4}
    upper = open_source(str(photos), include=["*.JPG"])
    assert upper.keys() == ["UPPER", "cats/001", "cats/002", "dogs/001"]


def test_directory_globs_apply_to_zip_and_tar_archives(tmp_path: Path) -> None:
    files = {"cats/001.jpg": b"c", "dogs/001.jpg": b"d", "X.JPG": b"x"}
    z = _zip(tmp_path / "p.zip", files)
    t = _tar(tmp_path / "p.tar", sorted(files.items()))
    for path in (z, t):
        assert open_archive(str(path), exclude=["cats"]).keys() == ["X", "dogs/001"]
        assert open_archive(str(path), include=["*.jpg"], exclude=["dogs/"]).keys() == [
            "X", "cats/001"]


def test_directory_and_case_rules_apply_to_table_folders(tmp_path: Path) -> None:
    d = tmp_path / "t"
    (d / "2024").mkdir(parents=True)
    (d / "2025").mkdir()
    pq.write_table(pa.table({"x": [1]}), d / "2024" / "a.parquet")
    pq.write_table(pa.table({"x": [2]}), d / "2025" / "b.PARQUET")
    assert open_table(str(d), exclude=["2024"]).read_all().column("x").to_pylist() == [2]
    assert open_table(str(d), include=["*.parquet"]).read_all().column("x").to_pylist() == [1, 2]


def test_a_glob_that_matches_no_file_is_warned_of_and_reported(photos: Path) -> None:
    with pytest.warns(GlobWarning) as caught:
        src = open_source(str(photos), exclude=["cat"])
        assert len(src) == 5
    message = (
        f"--exclude 'cat' (exclude= in Python) matched no file of {str(photos)!r}; a pattern "
        "matches a file's path there (e.g. 'UPPER.JPG'), its name, or a directory on its "
        "path: check the pattern"
    )
    assert [str(w.message) for w in caught] == [message]
    assert src.report.unused_globs == [message]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # globs that match warn nothing
        assert len(open_source(str(photos), exclude=["cats"], include=["*.jpg"])) == 2


def test_a_table_glob_that_matches_no_file_is_warned_of(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    with pytest.warns(GlobWarning, match=r"^--exclude 'b\.parquet' \(exclude= in Python\) "
                                         r"matched no file of "):
        assert open_table(str(tmp_path), exclude=["b.parquet"]).read_all().num_rows == 1


def test_cli_excludes_a_directory_and_prints_one_line_per_unused_glob(
        run: RunFn, photos: Path) -> None:
    for pattern in ("cats", "cats/"):
        r = run("commit", "p", "--from", str(photos), "--exclude", pattern, "--json")
        assert r.json["rows"] == 3 and r.json["source"]["unused_globs"] == []
    r = run("commit", "p", "--from", str(photos), "--include", "*.jpg", "--json")
    assert r.json["rows"] == 4 and r.json["source"]["columns"] == {"jpg": 4}
    r = run("commit", "q", "--from", str(photos), "--exclude", "cat", "--exclude", "dogs")
    assert r.err == (
        "not read: 1 folder (dogs/), left out by --include/--exclude\n"
        f"warning: --exclude 'cat' (exclude= in Python) matched no file of {str(photos)!r}; "
        "a pattern matches a file's path there (e.g. 'UPPER.JPG'), its name, or a directory "
        "on its path: check the pattern\n"
    )


@pytest.mark.parametrize("archive", [False, True])
def test_the_case_clash_advice_leaves_out_just_the_file_it_names(
        run: RunFn, repo: Repository, tmp_path: Path, archive: bool) -> None:
    files = {"sub/x.jpg": b"lower", "sub/x.JPG": b"upper", "y.jpg": b"y"}
    if archive:
        src = _zip(tmp_path / "a.zip", files)
    else:
        src = tmp_path / "src"
        for name, data in files.items():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes(data)
    err = run("commit", "p", "--from", str(src), rc=1).err
    assert "both give column 'jpg' of sample 'sub/x'" in err
    advice = re.search(r"--exclude '(/[^']+)'", err)
    assert advice is not None
    left_out = advice.group(1).lstrip("/")
    r = run("commit", "p", "--from", str(src), "--exclude", advice.group(1), "--json")
    assert r.json["source"]["unused_globs"] == []
    kept = {k: v for k, v in files.items() if k != left_out}
    got = repo.dataset("p").to_arrow().sort_by("__key__").to_pylist()
    assert [(row["__key__"], row["jpg"]) for row in got] == [
        (k.rsplit(".", 1)[0], v) for k, v in sorted(kept.items())]
    # the other way round too: the exact path of the other file leaves out only that one
    other = next(k for k in files if k.startswith("sub/") and k != left_out)
    r = run("commit", "q", "--from", str(src), "--exclude", f"/{other}", "--json")
    assert repo.dataset("q").to_arrow().column("jpg").to_pylist().count(files[left_out]) == 1


def test_cli_names_the_glob_when_nothing_is_left(run: RunFn, photos: Path) -> None:
    r = run("commit", "p", "--from", str(photos), "--include", "*.png", rc=1)
    assert r.err == (
        f"dload: error: {photos}: no files to ingest: --include '*.png' (include=/exclude= in "
        "Python) left out every file there (6 files); --include '*.png' matched no file; "
        "loosen the globs (a pattern matches a file's path, its name or a directory on its "
        "path; '*' matches every file)\n"
    )


# --- C3. an --as that does not fit the path -------------------------------------------------

def test_as_table_on_a_folder_of_files_says_to_use_as_files(run: RunFn, photos: Path) -> None:
    r = run("commit", "x", "--from", str(photos), "--as", "table", rc=1)
    assert r.err == (
        f"dload: error: {str(photos)!r} is a folder of files with no table among them "
        "(.parquet, .pq, .csv, .tsv, .jsonl, .ndjson, .arrow, .feather), not a folder of tables: "
        "read it with --as files, or drop --as to detect it (in Python: open_source(path))\n"
    )


def test_as_table_on_a_zip_says_it_is_a_zip_archive(run: RunFn, tmp_path: Path) -> None:
    z = _zip(tmp_path / "s.zip", {"a.txt": b"x"})
    r = run("commit", "x", "--from", str(z), "--as", "table", rc=1)
    assert r.err == (
        f"dload: error: {str(z)!r} is a zip archive, not a table (tables inside an archive are "
        "not read as tables: extract it and commit the folder): read it with --as archive, "
        "or drop --as to detect it (in Python: open_source(path) or dl.from_archive(path))\n"
    )


def test_as_archive_on_a_csv_says_it_is_a_csv_table(run: RunFn, tmp_path: Path) -> None:
    c = tmp_path / "events.csv"
    c.write_text("id,x\na,1\n")
    r = run("commit", "x", "--from", str(c), "--as", "archive", rc=1)
    assert r.err == (
        f"dload: error: {str(c)!r} is a CSV table, not an archive: read it with --as table, "
        "or drop --as to detect it (in Python: open_table(path))\n"
    )
    with pytest.raises(ConfigError, match="is a CSV table, not an archive"):
        dl.from_archive(str(c))


def test_a_table_glob_that_leaves_nothing_names_the_globs(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    with pytest.raises(dl.NotFoundError) as e:
        open_table(str(tmp_path), include=["*.csv"])
    assert str(e.value) == (
        f"no Parquet, CSV, JSON Lines or Arrow files at {str(tmp_path)!r} after "
        "--include/--exclude: they leave out all 1 table files there (e.g. 'a.parquet'); "
        "--include '*.csv' matched no file; check the globs"
    )


def test_a_gzip_tar_named_zip_is_read_as_the_tar_gz_it_is(run: RunFn, tmp_path: Path,
                                                          local_root: str) -> None:
    files = [("a.txt", b"one"), ("b.txt", b"two")]
    misnamed = _tar(tmp_path / "x.zip", files, "w:gz")
    right = _tar(tmp_path / "x.tar.gz", files, "w:gz")
    assert [s["txt"] for s in open_archive(str(misnamed))] == ["one", "two"]
    a = run("commit", "x", "--from", str(misnamed), "--json").json
    b = run("commit", "x", "--from", str(right), "--json").json
    assert a["rows"] == 2 and a["version"] == b["version"]


# --- C5. an archive holding the same entry twice --------------------------------------------

def _dup_message(where: Path) -> str:
    return (
        f"{where}: the archive holds the entry 'a.jpg' twice (the same path; './' and repeated "
        "'/' dropped, backslashes read as '/'), and a sample has one file per column; rebuild the "
        "archive without the duplicate entry (extract it, keep the copy you want, and archive it "
        "again)"
    )


def test_a_tar_with_an_entry_twice_says_so(run: RunFn, tmp_path: Path) -> None:
    t = _tar(tmp_path / "dup.tar", [("a.jpg", b"first"), ("a.jpg", b"second")])
    with pytest.raises(SchemaError) as e:
        open_archive(str(t)).keys()
    assert str(e.value) == _dup_message(t)
    r = run("commit", "d", "--from", str(t), rc=1)
    assert r.err == f"dload: error: {_dup_message(t)}\n"


def test_a_zip_with_an_entry_twice_says_so(tmp_path: Path) -> None:
    z = tmp_path / "dup.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
        _zip(z, {"a.jpg": b"first"})
        with zipfile.ZipFile(z, "a") as zf:
            zf.writestr("./a.jpg", b"second")
    with pytest.raises(SchemaError) as e:
        open_archive(str(z)).keys()
    assert str(e.value) == _dup_message(z)


# --- C4. an append that forgot --key-column -------------------------------------------------

def test_append_without_the_key_column_suggests_it(run: RunFn, tmp_path: Path,
                                                   local_root: str) -> None:
    pq.write_table(pa.table({"id": [10, 2, 3], "v": [1, 2, 3]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [11, 12], "v": [4, 5]}), tmp_path / "b.parquet")
    run("commit", "t", "--from", str(tmp_path / "a.parquet"), "--key-column", "id")
    b = str(tmp_path / "b.parquet")
    r = run("append", "t", "--from", b, rc=1)
    assert r.err == (
        f"dload: error: {b} has column(s) ['id'] that 't' does not have (its columns: ['v']); "
        "append adds rows, not columns: if 'id' holds the keys (a commit with --key-column id "
        "stores them in __key__, not as a column), append with --key-column id (key='id' in "
        "Python); otherwise drop it from the table, or commit a new version with every column\n"
    )
    assert run("append", "t", "--from", b, "--key-column", "id", "--json").json["rows"] == 5
    keys = [s["__key__"] for s in Repository.open(local_root).dataset("t").samples()]
    assert sorted(keys) == ["10", "11", "12", "2", "3"]


def test_python_append_without_key_suggests_key(repo: Repository) -> None:
    repo.commit("t", pa.table({"id": [1, 2], "v": [1, 2]}), key="id", progress=False)
    with pytest.raises(SchemaError, match=r"append with --key-column id \(key='id' in Python\)"):
        repo.append("t", pa.table({"id": [3], "v": [3]}), progress=False)
    with pytest.raises(SchemaError) as e:  # two extra columns: no key suggestion
        repo.append("t", pa.table({"id": [3], "w": [3], "v": [3]}), progress=False)
    assert "--key-column" not in str(e.value)
    assert "drop those columns from the table" in str(e.value)
