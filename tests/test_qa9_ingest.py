"""Ingestion findings of QA round 9: labels checked as int64 digits, ``a:b.jpg`` in archives,
archives joined with ``cat``, the append hint for ``--split first``, ``file://`` folders and
globs anchored with a leading ``/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository, SchemaError
from dload_arrow.ingest import open_source


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


# --- 1. a label is plain digits within int64, and its error names the file and the fix -------

def test_a_label_beyond_int64_is_refused_naming_the_file_and_the_fix(
        run: RunFn, tmp_path: Path) -> None:
    src = _tree(tmp_path / "c", {"a.cls": b"99999999999999999999"})
    r = run("commit", "c", "--from", str(src), rc=1)
    assert "a.cls: the label 99999999999999999999 does not fit in int64" in r.err
    assert "rename its extension" in r.err and "--exclude /a.cls" in r.err


def test_a_label_with_underscores_is_refused_not_read_as_a_number(
        repo: Repository, tmp_path: Path) -> None:
    src = _tree(tmp_path / "c", {"a.cls": b"1_000"})
    with pytest.raises(SchemaError, match=r"a\.cls: expected an integer label .* b'1_000'"):
        repo.commit("c", open_source(str(src)), progress=False)


def test_a_checkpoint_index_file_names_the_file_and_the_exclude(
        run: RunFn, tmp_path: Path) -> None:
    src = _tree(tmp_path / "m", {"model.ckpt.index": b"\x00\x01binary", "model.txt": b"x"})
    r = run("commit", "m", "--from", str(src), rc=1)
    assert "model.ckpt.index: expected an integer label" in r.err
    assert "--exclude '*.index'" in r.err


def test_labels_with_a_sign_and_whitespace_still_read(repo: Repository, tmp_path: Path) -> None:
    src = _tree(tmp_path / "c", {"a.cls": b" -12\n", "b.cls": b"+7",
                                 "c.cls": b"9223372036854775807"})
    repo.commit("c", open_source(str(src)), progress=False)
    assert repo.dataset("c").to_arrow()["cls"].to_pylist() == [-12, 7, 2**63 - 1]


# --- 2. 'a:b.jpg' is a name, not a drive: archives give the folder's keys ---------------------

def test_a_colon_after_a_letter_gives_the_same_keys_in_tar_zip_and_folder(tmp_path: Path) -> None:
    import tarfile
    import zipfile

    names = {"a:b.jpg": b"1", "d/x:y.txt": b"2"}
    folder = _tree(tmp_path / "f", names)
    with tarfile.open(tmp_path / "t.tar", "w") as tf:
        tf.add(folder, arcname=".")
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as zf:
        for name, data in names.items():
            zf.writestr(name, data)
    want = ["a:b", "d/x:y"]
    for src in (folder, tmp_path / "t.tar", tmp_path / "z.zip"):
        assert sorted(open_source(str(src)).keys()) == want, src


# --- 3. archives joined with `cat` are refused, not cut to the first one ------------------------

def _tar_bytes(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _compress(data: bytes, ext: str) -> bytes:
    import gzip

    import zstandard

    if ext == "tar.gz":
        return gzip.compress(data)
    if ext == "tar.zst":
        return zstandard.ZstdCompressor(write_checksum=True).compress(data)
    return data


@pytest.mark.parametrize("ext", ["tar", "tar.gz", "tar.zst"])
def test_archives_joined_with_cat_are_refused_naming_the_offset_and_the_fix(
        run: RunFn, tmp_path: Path, ext: str) -> None:
    a, b = _tar_bytes({"x.txt": b"1"}), _tar_bytes({"y.txt": b"2"})
    joined = tmp_path / f"all.{ext}"
    joined.write_bytes(_compress(a, ext) + _compress(b, ext))
    r = run("commit", "all", "--from", str(joined), rc=1)
    assert f"all.{ext}: another tar header (entry 'y.txt') at byte {len(a)}" in r.err
    assert "joined with `cat`" in r.err and "tar -xif" in r.err and "tar -cf all.tar" in r.err


@pytest.mark.parametrize("ext", ["tar", "tar.gz", "tar.zst"])
def test_zeros_after_the_end_of_archive_marker_are_still_read(
        repo: Repository, tmp_path: Path, ext: str) -> None:
    padded = tmp_path / f"p.{ext}"
    padded.write_bytes(_compress(_tar_bytes({"x.txt": b"1"}) + bytes(1 << 20), ext))
    repo.commit("p", open_source(str(padded)), progress=False)
    assert repo.dataset("p").to_arrow()["txt"].to_pylist() == ["1"]


# --- 4. an append without the dataset's --split is told to use it, not to drop the files -------

def test_an_append_without_split_first_is_told_to_use_it(run: RunFn, tmp_path: Path) -> None:
    sp = _tree(tmp_path / "sp", {"x.seg.png": b"a", "x.jpg": b"b"})
    sp2 = _tree(tmp_path / "sp2", {"y.seg.png": b"c", "y.jpg": b"d"})
    run("commit", "sp", "--from", str(sp), "--split", "first")
    r = run("append", "sp", "--from", str(sp2), rc=1)
    hint = r.err.split("append adds rows, not columns: ", 1)[1]
    assert hint.startswith("its columns ['seg.png'] were read with --split first")
    assert "append with --split first; otherwise leave those files out" in hint
    run("append", "sp", "--from", str(sp2), "--split", "first")


def test_an_append_with_split_first_to_a_last_split_dataset_is_told_to_drop_it(
        run: RunFn, tmp_path: Path) -> None:
    sp = _tree(tmp_path / "sp", {"x.seg.png": b"a", "x.jpg": b"b"})
    run("commit", "sp", "--from", str(sp))
    r = run("append", "sp", "--from", str(sp), "--split", "first", rc=1)
    assert "append without --split first" in r.err


# --- 5. a folder given as a file:// URL is read, as an archive's is -------------------------------

def test_a_file_url_reads_a_folder(run: RunFn, repo: Repository, tmp_path: Path) -> None:
    src = _tree(tmp_path / "d", {"a.txt": b"1", "sub/b.txt": b"2"})
    assert open_source(src.as_uri()).keys() == ["a", "sub/b"]
    r = run("commit", "d", "--from", src.as_uri(), "--json")
    assert r.json["rows"] == 2
    r = run("commit", "e", "--from", (tmp_path / "none").as_uri(), rc=1)
    assert "none" in r.err and "check the path" in r.err


def test_a_file_url_reads_a_table_file_and_a_table_folder(run: RunFn, repo: Repository,
                                                          tmp_path: Path) -> None:
    """QA: a file:// URL worked for folders and archives, but a table said "no file or
    directory" of a file that exists."""
    from dload_arrow.ingest import open_table

    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "2024-01.csv").write_text("id,v\na,1\nb,2\n")
    csv = (tmp_path / "ev" / "2024-01.csv").as_uri()
    assert open_table(csv, key="id").read_all().column("id").to_pylist() == ["a", "b"]
    assert run("commit", "t", "--from", csv, "--key-column", "id", "--json").json["rows"] == 2
    folder = (tmp_path / "ev").as_uri()
    assert run("commit", "u", "--from", folder, "--as", "table", "--json").json["rows"] == 2
    assert repo.dataset("t").get("b")["v"] == 2


# --- 6. a leading '/' anchors a glob to the top, as in .gitignore ---------------------------------

def test_a_leading_slash_anchors_an_exclude_to_the_top(run: RunFn, tmp_path: Path) -> None:
    import zipfile

    files = {"cats/a.jpg": b"1", "pets/cats/b.jpg": b"2", "c.jpg": b"3", "dogs/d.jpg": b"4"}
    src = _tree(tmp_path / "d", files)
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    for where in (src, tmp_path / "z.zip"):
        assert open_source(str(where), exclude=["/cats"]).keys() == ["c", "dogs/d", "pets/cats/b"]
        assert open_source(str(where), include=["/*.jpg"]).keys() == ["c"]
        assert open_source(str(where), include=["/**/cats"]).keys() == ["cats/a", "pets/cats/b"]
    r = run("commit", "x", "--from", str(src), "--exclude", "/cats", "--json")
    assert r.json["rows"] == 3 and r.json["source"]["excluded_dirs"] == ["cats/"]
    assert "matched no file" not in r.err


def test_a_leading_double_star_matches_at_the_top_level_too(tmp_path: Path) -> None:
    from dload_arrow.ingest import Globs

    assert Globs(include="**/*.jpg")("top.jpg") and Globs(include="**/*.jpg")("a/b/x.jpg")
    assert Globs(include="**/top.jpg")("top.jpg")
    cats = Globs(exclude="**/cats")
    assert not cats("cats/c.jpg") and not cats("a/cats/d.jpg")
    assert cats.excludes_dir("cats") and cats.excludes_dir("a/cats")
    assert Globs(exclude="**/cats")("dogs/cats.jpg")  # a name, not the folder


def test_a_single_file_that_is_no_table_nor_archive_gets_advice_for_what_it_is(
        run: RunFn, tmp_path: Path) -> None:
    """QA: x.parquet.gz was told to "commit a tar of the files", and a .json or .tsv file to
    "re-download the archive". (A .csv.gz is read: tests/test_compressed_tables.py.)"""
    import gzip

    (tmp_path / "x.parquet.gz").write_bytes(gzip.compress(b"PAR1 not really"))
    r = run("commit", "t", "--from", str(tmp_path / "x.parquet.gz"), rc=1)
    assert "is a Parquet table compressed with gzip" in r.err
    assert "`gzip -dk x.parquet.gz`" in r.err and "commit 'x.parquet'" in r.err
    (tmp_path / "y.json").write_text('{"a": 1}\n')
    r = run("commit", "t", "--from", str(tmp_path / "y.json"), rc=1)
    assert "neither a table dload reads (.parquet, .pq, .csv, .tsv, .jsonl, .ndjson" in r.err
    assert "rename it to .jsonl" in r.err and "re-download" not in r.err
    (tmp_path / "z.tar").write_bytes(b"not a tar at all" * 40)
    r = run("commit", "t", "--from", str(tmp_path / "z.tar"), rc=1)
    assert "re-download" in r.err  # an archive's extension: a damaged archive
