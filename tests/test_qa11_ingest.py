"""QA round "ingest3": committing from a shell, the folder around the store, odd entries."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import dload


def _project(tmp_path: Path) -> Path:
    imgs = tmp_path / "data" / "imgs"
    imgs.mkdir(parents=True)
    (imgs / "a.jpg").write_bytes(b"A")
    (imgs / "b.jpg").write_bytes(b"B")
    return tmp_path


def test_a_folder_holding_the_root_and_cache_commits_only_its_own_files(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    where = ["--root", "data/store", "--cache-dir", "data/cache"]
    first = dload("commit", "photos", "--from", "data", *where, "--json", cwd=cwd).json
    keys = dload("sql", "select __key__ from samples('photos') order by 1", "--json", *where,
                 cwd=cwd).json  # (fills the cache with the manifest)
    assert [r["__key__"] for r in keys] == ["imgs/a", "imgs/b"]
    again = dload("commit", "photos", "--from", "data", *where, "--json", cwd=cwd).json
    assert first["version"] == again["version"]  # the store's files never became samples
    skipped = {s["name"]: s["reason"] for s in again["source"]["skipped"]}
    assert skipped == {"cache/": "dload's own data (not read)",
                       "store/datasets/": "dload's own data (not read)",
                       "store/shards/": "dload's own data (not read)",
                       "store/.locks/": "hidden directory (not read)"}
    text = dload("append", "photos", "--from", "data", *where, cwd=cwd, rc=1)
    assert "already" in text.err  # the same two keys again, not the store's files


def test_a_project_whose_root_is_its_own_folder_commits_from_it(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    (cwd / "notes").mkdir()
    (cwd / "notes" / "n.txt").write_text("hi")
    where = ["--root", ".", "--cache-dir", ".dload-cache"]
    dload("commit", "photos", "--from", "data", *where, cwd=cwd)
    mixed = dload("commit", "all", "--from", ".", *where, "--json", cwd=cwd).json
    skipped = {s["name"] for s in mixed["source"]["skipped"]}
    assert {"datasets/", "shards/"} <= skipped
    keys = dload("sql", "select __key__ from samples('all') order by 1", "--json", *where,
                 cwd=cwd).json
    assert [r["__key__"] for r in keys] == ["data/imgs/a", "data/imgs/b", "notes/n"]


def test_from_inside_the_root_is_refused(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    where = ["--root", "data/store", "--cache-dir", "data/cache"]
    dload("commit", "photos", "--from", "data/imgs", *where, cwd=cwd)
    r = dload("commit", "x", "--from", "data/store/datasets", *where, cwd=cwd, rc=1)
    assert "where dload keeps its own data" in r.err and "point --from" in r.err
    assert json.loads(dload("ls", "--json", *where, cwd=cwd).out)[0]["name"] == "photos"


def test_a_table_folder_holding_its_root_commits_the_same_table_every_time(
        tmp_path: Path) -> None:
    """QA ingest 42: the second run saw the root's manifests beside the table's files, read
    the folder as files and published one blob row as latest (exit 0)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"user": ["u1", "u2", "u3"], "clicks": [1, 2, 3]}),
                   data / "part-0.parquet")
    where = ["--root", "data/store", "--cache-dir", "cache"]
    runs = [dload("commit", "events", "--from", "data", *where, "--json", cwd=tmp_path).json
            for _ in range(2)]
    assert runs[0]["version"] == runs[1]["version"] and runs[1]["source"]["kind"] == "table"
    assert runs[1]["shards_uploaded"] == 0
    keyed = [dload("commit", "events", "--from", "data", *where, "--key-column", "user", *extra,
                   "--json", cwd=tmp_path).json for extra in ([], ["--as", "table"])]
    assert keyed[0]["version"] == keyed[1]["version"] and keyed[0]["rows"] == 3
    rows = dload("sql", "select __key__, clicks from samples('events') order by 1", "--json",
                 *where, cwd=tmp_path).json
    assert rows == [{"__key__": f"u{i}", "clicks": i} for i in (1, 2, 3)]


def test_from_a_roots_or_caches_shards_folder_is_refused(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    where = ["--root", "store", "--cache-dir", "cache"]
    dload("commit", "photos", "--from", "data/imgs", *where, cwd=cwd)
    (cwd / "cache" / "shards").mkdir(parents=True, exist_ok=True)
    for inner in ("store/shards", "store/datasets", "cache", "cache/shards"):
        r = dload("commit", "x", "--from", inner, *where, cwd=cwd, rc=1)
        assert "one of the folders where dload keeps its own data" in r.err, r.err
        for as_table in ([], ["--as", "table"]) if "shards" in inner else ([],):
            r = dload("commit", "x", "--from", inner, *where, *as_table, cwd=cwd, rc=1)
            assert "point --from at the folder of your files" in r.err, r.err
    assert [d["name"] for d in json.loads(dload("ls", "--json", *where, cwd=cwd).out)] == [
        "photos"]
    r = dload("commit", "x", "--from", "store", "--as", "table", *where, cwd=cwd, rc=1)
    assert "holds only folders that are not read" in r.err, r.err  # (not "use --as files")


def test_a_tar_with_an_entry_stored_again_later_says_twice(tmp_path: Path) -> None:
    import io
    import tarfile

    import pytest

    from dload_arrow import SchemaError
    from dload_arrow.ingest import open_archive

    path = tmp_path / "data.tar"
    with tarfile.open(path, "w") as tf:  # what `tar -rf data.tar a.bin` makes of an update
        for name, data in [("a.bin", b"first"), ("b.bin", b"other"), ("a.bin", b"second")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    with pytest.raises(SchemaError, match=r"holds the entry 'a\.bin' twice"):
        open_archive(str(path)).keys()
    r = dload("commit", "d", "--from", str(path), "--root", "root", cwd=tmp_path, rc=1)
    assert "twice" in r.err and "adjacent" not in r.err


def test_an_unreadable_file_is_named_with_the_fix(tmp_path: Path) -> None:
    import subprocess

    from test_cli import DLOAD
    from test_roots_qa7 import _unprivileged

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "a.bin").write_bytes(b"ok")
    (data / "sub" / "b.bin").write_bytes(b"s")
    (data / "sub" / "b.bin").chmod(0)
    argv = [DLOAD, "commit", "u", "--from", str(data), "--root", str(tmp_path / "root")]
    r = subprocess.run(_unprivileged(argv), capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "cannot read" in r.stderr and "sub/b.bin" in r.stderr and "chmod u+r" in r.stderr
    excluded = subprocess.run(_unprivileged([*argv, "--exclude", "/sub/b.bin"]),
                              capture_output=True, text=True, timeout=120)
    assert excluded.returncode == 0, excluded.stderr  # the message's --exclude works


def test_a_file_removed_after_the_listing_says_the_folder_changed(tmp_path: Path) -> None:
    import pytest

    from dload_arrow.ingest import DirectorySource

    data = tmp_path / "data"
    data.mkdir()
    for name in ("a.bin", "b.bin"):
        (data / name).write_bytes(b"x")
    src = DirectorySource(data)
    assert src.keys() == ["a", "b"]  # listed
    (data / "b.bin").unlink()
    with pytest.raises(FileNotFoundError, match=r"listed, then removed.*changed during"):
        list(src.reader())


def test_control_characters_in_names_are_escaped_in_reports_and_export(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "ok.bin").write_bytes(b"1")
    (data / "NO\nTES").write_bytes(b"x")  # no extension: reported as not ingested
    (data / "new\nline.bin").write_bytes(b"2")
    r = dload("commit", "d", "--from", str(data), "--root", "root", cwd=tmp_path)
    assert "(NO\\nTES)" in r.err and "NO\nTES" not in r.err
    out = tmp_path / "out"
    e = dload("export", "d", "new\nline", "--to", str(out), "--root", "root", cwd=tmp_path)
    assert e.out.strip().endswith("new\\nline.bin") and (out / "new\nline.bin").read_bytes() == b"2"


def test_an_empty_tar_gz_is_called_empty_not_a_non_tar(tmp_path: Path) -> None:
    import gzip

    for name in ("photos.tar.gz", "photos.tgz", "zero.tar.gz"):
        path = tmp_path / name
        path.write_bytes(b"" if name != "zero.tar.gz" else gzip.compress(b""))
        r = dload("commit", "d", "--from", str(path), "--root", "root", cwd=tmp_path, rc=1)
        assert "is empty or truncated" in r.err and "not a tar archive" not in r.err, r.err
