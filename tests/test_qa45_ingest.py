"""QA round 45 (ingest): a header that is not UTF-8, archives under a table's name, a cut
gzip stream, a zip directory entry holding data, and text bounds kept out of the manifest."""

from __future__ import annotations

import glob
import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pyarrow as pa
from test_cli import dload

from dload_arrow import Repository
from dload_arrow.store.bounds import MAX_TEXT_BOUND


def test_a_csv_header_that_is_not_utf8_is_the_users_error(tmp_path: Path) -> None:
    (tmp_path / "l.csv").write_bytes("café,x\n1,2\n".encode("latin-1"))
    (tmp_path / "l.csv.gz").write_bytes(gzip.compress("café,x\n1,2\n".encode("latin-1")))
    for name in ("l.csv", "l.csv.gz"):
        r = dload("commit", "t", "--from", name, "--root", "store", cwd=tmp_path, rc=1)
        assert f"'{name}', line 1 is not UTF-8 text" in r.err
        assert "iconv -f latin1 -t utf-8" in r.err


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_an_archive_under_a_tables_name_is_read_as_the_archive_it_is(tmp_path: Path) -> None:
    _zip(tmp_path / "photos.csv", {"a.jpg": b"\xff\xd8A", "b.jpg": b"\xff\xd8B"})
    with tarfile.open(tmp_path / "photos.jsonl", "w") as tf:
        info = tarfile.TarInfo("a.jpg")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"\xff\xd8A"))
    where = ["--root", "store", "--json"]
    assert dload("commit", "z", "--from", "photos.csv", *where, cwd=tmp_path).json["rows"] == 2
    assert dload("commit", "t", "--from", "photos.jsonl", *where, cwd=tmp_path).json["rows"] == 1
    r = dload("commit", "x", "--from", "photos.csv", "--as", "table", *where, cwd=tmp_path, rc=1)
    assert "is a zip archive (by its first bytes), not a CSV table" in r.err
    assert "--as archive" in r.err
    r = dload("commit", "x", "--from", "photos.jsonl", "--as", "table", *where, cwd=tmp_path,
              rc=1)
    assert "is a tar archive (by its first bytes), not a JSON Lines table" in r.err


def test_a_gzip_stream_cut_short_is_called_truncated(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for i in range(5):
            data = os.urandom(20_000)
            info = tarfile.TarInfo(f"f{i}.bin")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue())
    (tmp_path / "a.tar.gz").write_bytes(packed[:3000])
    (tmp_path / "b.tar.gz").write_bytes(packed[:70_000])
    r = dload("commit", "x", "--from", "a.tar.gz", "--root", "s", cwd=tmp_path, rc=1)
    assert "a.tar.gz is truncated: its gzip stream ends before its end marker (" in r.err
    r = dload("commit", "x", "--from", "b.tar.gz", "--root", "s", cwd=tmp_path, rc=1)
    assert "is truncated: its gzip stream ends before its end marker, in or after entry" in r.err


def test_a_zip_directory_entry_holding_data_is_reported_not_dropped(tmp_path: Path) -> None:
    _zip(tmp_path / "x.zip", {"a.txt/": b"data here", "b.txt": b"x", "d/": b""})
    got = dload("commit", "x", "--from", "x.zip", "--root", "s", "--json", cwd=tmp_path).json
    assert got["rows"] == 1
    assert got["source"]["skipped"] == [
        {"name": "a.txt", "reason": "a directory entry holding 9 bytes (not read)"}]


def test_long_text_bounds_stay_out_of_the_manifest(repo: Repository, local_root: str) -> None:
    texts = [f"doc {i:03d} " * 3000 for i in range(60)]  # 24 KB each
    short = [f"s{i:03d}" for i in range(60)]
    mixed = [t if i % 2 else s for i, (t, s) in enumerate(zip(texts, short, strict=True))]
    table = pa.table({"__key__": [f"k{i:03d}" for i in range(60)], "text": texts,
                      "short": short, "mixed": mixed})
    repo.commit("docs", table, row_group_size=50_000, progress=False)
    ds = repo.dataset("docs")
    (path,) = glob.glob(os.path.join(local_root, "datasets", "docs", "manifests", "*"))
    assert os.path.getsize(path) < 60_000  # the texts' bounds would be 2 x 24 KB a row group
    m = ds.manifest.table
    assert set(m["rg_min.short"].to_pylist()[0]) != {None}  # short bounds are kept
    assert set(m["rg_min.text"].to_pylist()[0]) == {None} == set(m["rg_max.text"][0].as_py())
    assert m["min.text"].to_pylist() == [None] == m["min.mixed"].to_pylist()  # a shard's too
    rows = table.to_pylist()
    for where, keep in [(f"text = '{texts[7]}'", lambda r: r["text"] == texts[7]),
                        ("mixed > 'doc 029'", lambda r: r["mixed"] > "doc 029"),
                        ("text < 'doc 010'", lambda r: r["text"] < "doc 010")]:
        want = [r["__key__"] for r in rows if keep(r)]
        assert ds.where(where).to_arrow()["__key__"].to_pylist() == want, where
    described = {r["column"]: r for r in ds.describe().to_pylist()}
    assert described["text"]["min"] is None and described["mixed"]["max"] is None
    assert described["short"]["min"] == "s000"  # (the manifest's)
    exact = {r["column"]: r for r in ds.describe(exact=True).to_pylist()}
    assert exact["mixed"]["min"].startswith("doc 001")  # measured from the data
    assert len(texts[0]) > MAX_TEXT_BOUND


def test_an_archive_of_tables_is_refused_with_how_to_read_its_rows(tmp_path: Path) -> None:
    csv = "id,x\n" + "".join(f"{i},{2 * i}\n" for i in range(100))
    _zip(tmp_path / "data.csv.zip", {"data.csv": csv.encode(), "README.md": b"hi"})
    with tarfile.open(tmp_path / "parts.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("a/part-0.csv")
        info.size = len(csv)
        tf.addfile(info, io.BytesIO(csv.encode()))
    _zip(tmp_path / "mixed.zip", {"a.jpg": b"\xff\xd8A", "labels.csv": csv.encode()})
    where = ["--root", "store", "--json"]
    r = dload("commit", "z", "--from", "data.csv.zip", *where, cwd=tmp_path, rc=1)
    assert "'data.csv.zip' is an archive of tables ('data.csv')" in r.err
    assert "`unzip data.csv.zip -d data`" in r.err and "--as archive" in r.err
    r = dload("commit", "t", "--from", "parts.tar.gz", *where, cwd=tmp_path, rc=1)
    assert "`mkdir parts && tar -xf parts.tar.gz -C parts`" in r.err
    stored = dload("commit", "z", "--from", "data.csv.zip", "--as", "archive", *where,
                   cwd=tmp_path).json
    assert stored["rows"] == 2  # the files, as bytes: asked for
    r = dload("commit", "x", "--from", "data.csv.zip", "--as", "table", *where, cwd=tmp_path,
              rc=1)
    assert "tables inside an archive are not read as tables: extract it" in r.err
    mixed = dload("commit", "m", "--from", "mixed.zip", *where, cwd=tmp_path).json
    assert mixed["rows"] == 2  # files beside the table: an archive of samples
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "data.csv").write_text(csv)
    (tmp_path / "tables" / "a.jpg").write_bytes(b"\xff\xd8A")
    r = dload("commit", "t", "--from", "tables", "--as", "table", "--root", "store",
              cwd=tmp_path)
    assert "not read: 1 file that is not a table (a.jpg)" in r.err
