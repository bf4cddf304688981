"""Ingestion findings of the third QA pass: table folders whose files differ, marker files,
late CSV types, a file named like the key column, hidden directories."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, Repository, SchemaError
from dload_arrow.ingest import detect_kind, open_archive, open_source, open_table


def test_a_column_only_in_a_later_parquet_file_is_kept(tmp_path: Path,
                                                        repo: Repository) -> None:
    pq.write_table(pa.table({"id": ["a", "b"], "x": [1, 2]}), tmp_path / "part-0.parquet")
    pq.write_table(pa.table({"id": ["c"], "x": [3.5], "label": ["cat"]}),
                   tmp_path / "part-1.parquet")
    table = open_table(str(tmp_path)).read_all()
    assert table.schema.names == ["id", "x", "label"]
    assert table.column("x").type == pa.float64()  # int64 then double: widened
    assert table.column("label").to_pylist() == [None, None, "cat"]
    repo.commit("drift", open_table(str(tmp_path)), key="id", progress=False)
    assert repo.dataset("drift").to_arrow().column("label").to_pylist() == [None, None, "cat"]


def test_a_csv_folder_with_an_extra_column_in_the_second_file(tmp_path: Path) -> None:
    (tmp_path / "c1.csv").write_text("id,x\na,1\nb,2\n")
    (tmp_path / "c2.csv").write_text("id,label,x\nc,cat,3\n")
    table = open_table(str(tmp_path)).read_all()
    assert table.to_pylist()[-1] == {"id": "c", "x": 3, "label": "cat"}
    assert table.column("label").to_pylist() == [None, None, "cat"]


def test_columns_whose_types_cannot_combine_name_the_file_and_column(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "x": [1]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": ["b"], "x": ["one"]}), tmp_path / "b.parquet")
    with pytest.raises(SchemaError, match=r"column 'x' is int64 .*b\.parquet.* string"):
        open_table(str(tmp_path))


def test_marker_files_do_not_hide_a_table_folder(tmp_path: Path) -> None:
    d = tmp_path / "spark"
    (d / "_temporary" / "0").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"]}), d / "part-00000.parquet")
    pq.write_table(pa.table({"id": ["zz"]}), d / "_temporary" / "0" / "part-x.parquet")
    for name in ("_SUCCESS", "_committed_123", "_started_123", ".part-00000.parquet.crc",
                 "README.md", "LICENSE"):
        (d / name).write_text("")
    assert detect_kind(str(d)) == "table"
    assert open_table(str(d)).read_all().column("id").to_pylist() == ["a"]
    (d / "photo.jpg").write_bytes(b"J")  # real data beside the table: a folder of files
    assert detect_kind(str(d)) == "files"


def test_a_csv_whose_type_widens_late_in_the_file_commits(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    with open(path, "w") as f:
        f.write("id,v\n")
        f.writelines(f"k{i},{i}\n" for i in range(200_000))
        f.write("klast,1.5\n")
    table = open_table(str(path)).read_all()
    assert table.column("v").type == pa.float64() and table.num_rows == 200_001


def test_a_csv_type_change_past_the_inferred_block_says_how_to_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dload_arrow.ingest.read_errors as read_errors

    monkeypatch.setattr(read_errors, "CSV_INFER_BYTES", 1 << 20)
    path = tmp_path / "m.csv"
    with open(path, "w") as f:
        f.write("id,v\n")
        f.writelines(f"k{i},{i}\n" for i in range(300_000))
        f.write("klast,1.5\n")
    with pytest.raises(SchemaError, match=r"m\.csv.*later value.*convert the file to Parquet"):
        open_table(str(path)).read_all()


def test_from_archive_refuses_a_file_named_like_the_key_column(tmp_path: Path) -> None:
    z = tmp_path / "k.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x.txt", "hello")
        zf.writestr("x.__key__", "other")
    with pytest.raises(SchemaError, match=r"'x\.__key__' would make a column named '__key__'"):
        dl.from_archive(str(z))
    pipe = dl.from_archive(str(z), exclude=["*.__key__"])
    assert list(pipe) == [{"__key__": "x", "txt": "hello"}]


def test_files_in_hidden_directories_are_not_ingested(tmp_path: Path) -> None:
    d = tmp_path / "d"
    for name, data in {"cats/001.jpg": b"J", ".git/description": b"x",
                       ".ipynb_checkpoints/notes-checkpoint.json": b"{}",
                       "cats/.cache/002.jpg": b"K"}.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    src = open_source(str(d))
    assert src.keys() == ["cats/001"]
    assert [s[0] for s in src.report.skipped] == [".git/", ".ipynb_checkpoints/",
                                                  "cats/.cache/"]
    z = tmp_path / "d.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("cats/001.jpg", b"J")
        zf.writestr(".git/description", b"x")
    arch = open_archive(str(z))
    assert arch.keys() == ["cats/001"] and arch.report.unmatched == [".git/description"]


def test_from_archive_on_a_directory_says_it_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ConfigError, match="is a directory, not an archive"):
        dl.from_archive(str(tmp_path))
