"""Ingestion findings of QA round 8 (issue7): CSV text read as written (keys, NaN, NA), integers
that float64 would round refused, columns without values stored as text, .npy dtypes and
empty arrays refused at commit, string tensors exported, and a folder of mixed formats."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository, SchemaError
from dload_arrow.ingest import open_source, open_table
from dload_arrow.ingest.export import write_sample_files


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _npy_dir(tmp_path: Path, arr: np.ndarray) -> Path:
    d = tmp_path / "src"
    d.mkdir()
    np.save(d / "s.npy", arr)
    return d


# --- 1. the key column is text as written; only an empty cell is a missing value -----------

def test_csv_key_column_keeps_its_leading_zeros(tmp_path: Path, repo: Repository) -> None:
    t = _write(tmp_path / "t.csv", "sku,zip\n007,02134\n010,10001\n")
    repo.commit("t", open_table(t, key="sku"), key="sku", progress=False)
    ds = repo.dataset("t")
    assert ds.to_arrow().column("__key__").to_pylist() == ["007", "010"]
    assert ds.get("007")["zip"] == 2134  # other columns keep pyarrow's inference


def test_cli_key_column_keeps_its_leading_zeros(tmp_path: Path, run: RunFn,
                                                repo: Repository) -> None:
    t = _write(tmp_path / "t.csv", "sku,v\n007,1\n7,2\n")
    run("commit", "t", "--from", str(t), "--key-column", "sku")
    assert repo.dataset("t").to_arrow().column("__key__").to_pylist() == ["007", "7"]


def test_csv_dunder_key_column_is_text_without_key_argument(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.csv", "__key__,v\n007,1\n7,2\n")
    assert open_table(t).read_all().column("__key__").to_pylist() == ["007", "7"]


def test_csv_empty_key_cell_is_refused_naming_file_and_row(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.csv", "sku,v\n007,1\n,2\n")
    with pytest.raises(SchemaError, match=r"t\.csv.*'sku' is empty in data row 2"):
        open_table(t, key="sku").read_all()


def test_csv_nan_in_a_float_column_is_nan_and_an_empty_cell_null(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.csv", "k,v\na,nan\nb,NaN\nc,inf\nd,1.5\ne,\n")
    v = open_table(t).read_all().column("v").to_pylist()
    assert math.isnan(v[0]) and math.isnan(v[1]) and v[2:] == [math.inf, 1.5, None]


def test_csv_na_and_null_beside_numbers_are_kept_as_text(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.csv", "k,v,w\na,1,2\nb,NA,N/A\nc,NULL,\n")
    table = open_table(t).read_all()
    assert table.column("v").to_pylist() == ["1", "NA", "NULL"]
    assert table.column("w").to_pylist() == ["2", "N/A", ""]  # an empty text cell is ''


# --- 2. integers that float64 would round are refused ---------------------------------------

@pytest.mark.parametrize(("name", "text", "value"), [
    ("big.csv", "id,v\na,18446744073709551621\nb,1\n", "18446744073709551621"),
    ("big.jsonl", '{"id": "a", "v": 9223372036854775813}\n', "9223372036854775813"),
    ("mixed.jsonl", '{"id": "a", "v": 9007199254740993}\n{"id": "b", "v": 0.5}\n',
     "9007199254740993"),
    ("mixed.csv", "id,v\na,9007199254740993\nb,0.5\n", "9007199254740993"),
])
def test_integer_that_float64_rounds_is_refused_naming_file_column_and_value(
        tmp_path: Path, name: str, text: str, value: str) -> None:
    t = _write(tmp_path / name, text)
    with pytest.raises(SchemaError, match=rf"{name}', column 'v': the integer {value} would be "
                                          r"stored as .*Parquet"):
        open_table(t, key="id").read_all()


def test_large_numbers_written_as_floats_or_exact_integers_are_kept(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.jsonl", '{"v": 1e20}\n{"v": 9007199254740992}\n{"v": 0.5}\n'
                                     '{"v": 9007199254740993.0}\n')
    assert open_table(t).read_all().column("v").to_pylist() == [
        1e20, 9007199254740992.0, 0.5, 9007199254740992.0]
    c = _write(tmp_path / "c" / "t.csv", "v\n1e20\n18446744073709551616\n0.5\n")
    assert open_table(c).read_all().column("v").to_pylist() == [1e20, 2.0 ** 64, 0.5]


def test_cli_refuses_a_csv_integer_beyond_int64_with_the_fix(tmp_path: Path, run: RunFn) -> None:
    t = _write(tmp_path / "big.csv", "id,v\na,18446744073709551621\n")
    err = run("commit", "b", "--from", str(t), "--key-column", "id", rc=1).err
    assert "column 'v': the integer 18446744073709551621" in err and "Parquet" in err


# --- 3-5. .npy files that a tensor column cannot hold --------------------------------------

def test_empty_npy_is_refused_naming_the_file(tmp_path: Path) -> None:
    d = _npy_dir(tmp_path, np.zeros((0, 3), np.float32))
    with pytest.raises(SchemaError, match=r"s\.npy: the \.npy array of shape \(0, 3\) holds no "
                                          "element"):
        _ = open_source(str(d)).schema


@pytest.mark.parametrize("dtype", ["datetime64[D]", "timedelta64[s]"])
def test_datetime_npy_is_refused_as_without_arrow_type(tmp_path: Path, run: RunFn,
                                                       dtype: str) -> None:
    d = _npy_dir(tmp_path, np.array([1, 2], dtype=dtype))
    err = run("commit", "dt", "--from", str(d), rc=1).err
    assert f"s.npy: dtype {dtype} has no Arrow tensor type" in err


@pytest.mark.parametrize(("arr", "what", "fix"), [
    (np.array(["x", "yy"]), "text", ".txt or .json"),
    (np.array([b"ab", b"c"]), "bytes", ".bin"),
])
def test_npy_of_text_or_bytes_is_refused_with_the_file_to_use(
        tmp_path: Path, arr: np.ndarray, what: str, fix: str) -> None:
    d = _npy_dir(tmp_path, arr)
    with pytest.raises(SchemaError, match=rf"s\.npy: a \.npy of {what} .*as a {fix}"):
        _ = open_source(str(d)).schema


def test_export_writes_a_stored_string_tensor_as_a_unicode_npy(tmp_path: Path,
                                                               repo: Repository) -> None:
    field = pa.field("npy", pa.list_(pa.string(), 2), metadata={b"dload.shape": b"[2]"})
    schema = pa.schema([pa.field("__key__", pa.string()), field])
    repo.commit("st", pa.table({"__key__": ["s"], "npy": [["x", "yy"]]}, schema=schema))
    ds = repo.dataset("st")
    [path] = write_sample_files(ds.get("s"), tmp_path / "out", ds.schema)
    assert np.load(path).tolist() == ["x", "yy"]


# --- 7. a column without values is text, which appends fill ---------------------------------

def test_csv_column_without_values_is_text_and_an_append_fills_it(
        tmp_path: Path, run: RunFn, repo: Repository) -> None:
    jan = _write(tmp_path / "jan.csv", "id,name,comment\n1,a,\n2,b,\n")
    feb = _write(tmp_path / "feb.csv", "id,name,comment\n3,c,late delivery\n")
    assert open_table(jan).schema.field("comment").type == pa.string()
    run("commit", "orders", "--from", str(jan), "--key-column", "id")
    run("append", "orders", "--from", str(feb), "--key-column", "id")
    # no value anywhere: nulls (not ''), so an append may also bring another type's values
    assert repo.dataset("orders").to_arrow().column("comment").to_pylist() == [
        None, None, "late delivery"]


def test_an_empty_column_appends_to_a_typed_one_as_nulls(tmp_path: Path, run: RunFn,
                                                          repo: Repository) -> None:
    # a day with no readings: its empty int, float, bool and date columns append as nulls
    jan = _write(tmp_path / "jan.csv", "id,n,f,b,t\na,1,1.5,true,2024-01-01\n")
    feb = _write(tmp_path / "feb.csv", "id,n,f,b,t\nb,,,,\n")
    run("commit", "m", "--from", str(jan), "--key-column", "id")
    run("append", "m", "--from", str(feb), "--key-column", "id")
    got = repo.dataset("m").to_arrow()
    assert got.column("n").to_pylist() == [1, None] and got.schema.field("n").type == pa.int64()
    assert got.column("t").to_pylist()[1] is None
    jl = _write(tmp_path / "mar.jsonl", '{"id": "c", "n": null}\n')
    repo.append("m", open_table(jl, key="id"), key="id", progress=False)
    assert repo.dataset("m").to_arrow().column("n").to_pylist() == [1, None, None]


def test_a_csv_column_with_no_value_appends_as_nulls_as_it_commits(
        tmp_path: Path, run: RunFn, repo: Repository) -> None:
    # the append reads the stored text column as text: its empty cells were '' there
    day = _write(tmp_path / "d1.csv", "id,v,note\n1,2,\n2,3,\n")
    run("commit", "m", "--from", str(day), "--key-column", "id")
    _write(tmp_path / "d2" / "a.csv", "id,v,note\n3,4,\n4,5,\n")
    run("append", "m", "--from", str(tmp_path / "d2"), "--key-column", "id")
    got = repo.dataset("m").to_arrow().sort_by("__key__")
    assert got.column("note").to_pylist() == [None] * 4
    # another file giving the column text: empty cells are '' then, in a commit as in an append
    _write(tmp_path / "d3" / "a.csv", "id,v,note\n5,6,\n")
    _write(tmp_path / "d3" / "b.csv", "id,v,note\n6,7,late\n7,8,\n")
    run("append", "m", "--from", str(tmp_path / "d3"), "--key-column", "id")
    run("commit", "c", "--from", str(tmp_path / "d3"), "--key-column", "id")
    want = ["", "late", ""]
    assert repo.dataset("m").to_arrow().sort_by("__key__").column("note").to_pylist()[4:] == want
    assert repo.dataset("c").to_arrow().sort_by("__key__").column("note").to_pylist() == want


def test_jsonl_column_of_nulls_is_nullable_text(tmp_path: Path) -> None:
    t = _write(tmp_path / "t.jsonl", '{"id": 1, "c": null}\n{"id": 2}\n')
    table = open_table(t).read_all()
    assert table.schema.field("c").type == pa.string()
    assert table.column("c").to_pylist() == [None, None]


def test_column_empty_in_one_file_takes_the_type_another_gives_it(tmp_path: Path) -> None:
    _write(tmp_path / "t" / "a.csv", "id,n\n1,\n")
    _write(tmp_path / "t" / "b.csv", "id,n\n2,5\n")
    table = open_table(tmp_path / "t").read_all()
    assert table.schema.field("n").type == pa.int64()
    assert table.column("n").to_pylist() == [None, 5]


# --- 10. a folder of mixed formats says why and what to do ----------------------------------

def test_mixed_table_formats_error_gives_the_commands(tmp_path: Path, run: RunFn) -> None:
    _write(tmp_path / "t" / "a.csv", "id,v\n1,2\n")
    _write(tmp_path / "t" / "b.jsonl", json.dumps({"id": 2, "v": 3}) + "\n")
    err = run("commit", "t", "--from", str(tmp_path / "t"), rc=1).err
    assert "mixes table formats (1 .csv, 1 .jsonl files)" in err
    assert "type their columns differently" in err
    assert "--include '*.csv'" in err and "dload append NAME" in err and "'*.jsonl'" in err
