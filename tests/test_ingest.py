"""Directories and tables into samples: grouping, types, globs, order, report, export."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dload_arrow import Repository, SchemaError, UnsafePathError
from dload_arrow.ingest import DirectorySource, open_source, open_table, split_name
from dload_arrow.ingest.export import write_sample_files
from dload_arrow.store.rows import field_shape


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def make_tree(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, data in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "data", {
        "b/y.wav": b"RIFFyy", "b/y.json": '{"text": "two"}', "b/y.cls": "2",
        "a/x.wav": b"RIFFxx", "a/x.json": '{"text": "one", "n": [1]}', "a/x.cls": "1",
        "a/x.npy": _npy(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "b/y.npy": _npy(np.zeros((2, 3), np.float32)),
        "c/z.TXT": "only text", "README": "no extension", ".hidden.wav": b"h",
    })


def test_split_name_uses_last_or_first_dot() -> None:
    assert split_name("a/x.wav") == ("a/x", "wav")
    assert split_name("a/x.seg.PNG") == ("a/x.seg", "png")
    assert split_name("a/x.seg.png", "first") == ("a/x", "seg.png")
    assert split_name("README") is None and split_name("d/.hidden.wav") is None


def test_directory_groups_files_by_path_without_extension(tree: Path) -> None:
    src = DirectorySource(tree)
    assert src.keys() == ["a/x", "b/y", "c/z"]  # sorted, recursive
    assert src.schema.names == ["__key__", "cls", "json", "npy", "txt", "wav"]
    types = {f.name: f.type for f in src.schema}
    assert types["wav"] == pa.binary() and types["json"] == pa.string()
    assert types["txt"] == pa.string() and types["cls"] == pa.int64()
    assert field_shape(src.schema.field("npy")) == (2, 3)
    report = src.report
    assert report.samples == 3 and report.columns["wav"] == 2 and report.columns["txt"] == 1
    assert sorted(report.unmatched) == [".hidden.wav", "README"]
    x = src.get("a/x")
    assert x["wav"] == b"RIFFxx" and json.loads(x["json"]) == {"text": "one", "n": [1]}
    assert x["cls"] == 1 and x["txt"] is None
    np.testing.assert_array_equal(x["npy"], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert [s["__key__"] for s in src] == ["a/x", "b/y", "c/z"]


def test_include_exclude_globs(tree: Path) -> None:
    only_audio = DirectorySource(tree, include=["*.wav", "*.cls"], exclude=["b/*"])
    assert only_audio.keys() == ["a/x"]
    assert only_audio.schema.names == ["__key__", "cls", "wav"]


def test_symlinks_are_reported_not_followed(tree: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    os.symlink(secret, tree / "a" / "leak.txt")
    src = DirectorySource(tree)
    keys = src.keys()
    assert "a/leak" not in keys
    assert ("a/leak.txt", "symbolic link (not followed)") in src.report.skipped


def test_case_clash_of_extensions_is_an_error(tmp_path: Path) -> None:
    make_tree(tmp_path / "d", {"x.jpg": b"1", "x.JPG": b"2"})
    with pytest.raises(SchemaError, match="both give column 'jpg'"):
        DirectorySource(tmp_path / "d").keys()


def test_bad_text_and_mismatched_tensor_name_the_file(tmp_path: Path) -> None:
    make_tree(tmp_path / "d", {"x.txt": b"\xff\xfe", "x.bin": b"ok"})
    with pytest.raises(SchemaError, match=r"x\.txt.*not UTF-8"):
        list(DirectorySource(tmp_path / "d"))
    make_tree(tmp_path / "e", {"a.npy": _npy(np.zeros(3)), "b.npy": _npy(np.zeros(4))})
    with pytest.raises(SchemaError, match=r"b\.npy.*shape \[4\]"):
        list(DirectorySource(tmp_path / "e"))


def test_directory_commit_round_trip_is_deterministic(tree: Path, repo: Repository) -> None:
    v1 = repo.commit("d", open_source(str(tree)).reader(), progress=False)
    v2 = repo.commit("d", DirectorySource(tree).reader(), progress=False)
    assert v1.version == v2.version and v2.shards_uploaded == 0
    ds = repo.dataset("d")
    assert ds.num_rows == 3 and field_shape(ds.schema.field("npy")) == (2, 3)
    table = ds.to_arrow()
    assert table.column("__key__").to_pylist() == ["a/x", "b/y", "c/z"]
    assert table.column("wav").to_pylist() == [b"RIFFxx", b"RIFFyy", None]


def test_tables_parquet_csv_jsonl_and_folders(tmp_path: Path, repo: Repository) -> None:
    t = pa.table({"id": ["r1", "r2", "r3"], "x": [1, 2, 3]})
    pq.write_table(t.slice(0, 2), tmp_path / "p1.parquet")
    pq.write_table(t.slice(2), tmp_path / "p2.parquet")
    folder = tmp_path / "parts"
    folder.mkdir()
    for f in ("p1.parquet", "p2.parquet"):
        (tmp_path / f).rename(folder / f)
    (tmp_path / "t.csv").write_text("id,x\nr1,1\nr2,2\nr3,3\n")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in t.to_pylist()))
    versions = []
    for path in (folder, tmp_path / "t.csv", tmp_path / "t.jsonl"):
        reader = open_table(str(path))
        versions.append(repo.commit("t", reader, key="id", progress=False).version)
    assert len(set(versions)) == 1  # same rows, same types: same version from every format
    assert repo.dataset("t").to_arrow().column("x").to_pylist() == [1, 2, 3]
    gen = repo.commit("g", open_table(str(tmp_path / "t.csv")), progress=False)
    keys = repo.dataset("g").to_arrow().column("__key__").to_pylist()
    assert gen.num_rows == 3 and keys == sorted(keys) and len(set(keys)) == 3


def test_table_file_that_does_not_fit_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,x\nr1,1\n")
    (tmp_path / "b.csv").write_text("id,x\nr2,hello\n")
    with pytest.raises(SchemaError, match=r"b\.csv"):
        open_table(str(tmp_path)).read_all()


def test_export_writes_fields_as_files_and_refuses_escapes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    schema = pa.schema([pa.field("__key__", pa.string()), pa.field("wav", pa.binary())])
    paths = write_sample_files({"__key__": "a/x", "wav": b"W", "txt": "hi", "cls": 3,
                                "none": None}, out, schema)
    assert sorted(os.path.relpath(p, out) for p in paths) == ["a/x.cls", "a/x.txt", "a/x.wav"]
    assert (out / "a" / "x.cls").read_text() == "3"
    for key in ("../escape", "/abs/x", "a/../../b"):
        with pytest.raises(UnsafePathError):
            write_sample_files({"__key__": key, "wav": b"W"}, out)
    with pytest.raises(UnsafePathError):
        write_sample_files({"__key__": "k", "../x": b"W"}, out)
    os.symlink(tmp_path, out / "link")
    with pytest.raises(UnsafePathError):
        write_sample_files({"__key__": "link/evil", "wav": b"W"}, out)
    assert not (tmp_path / "evil.wav").exists() and not (tmp_path / "escape.wav").exists()
