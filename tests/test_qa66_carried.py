"""Carried from stop 55's notes: a manifest whose sample schema lacks ``__key__`` was accepted
and ``get`` failed with a KeyError (QA hostile65)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def _with_schema(repo: dl.Repository, name: str, schema: pa.Schema) -> str:
    """Publish a copy of ``name``'s manifest as dataset 'odd' with another sample schema."""
    t = repo.dataset(name).manifest.table
    info = json.loads(t.schema.metadata[b"dload"])
    info.update(name="odd", schema=base64.b64encode(schema.serialize().to_pybytes()).decode())
    t = t.replace_schema_metadata({b"dload": json.dumps(info, sort_keys=True).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    data = sink.getvalue().to_pybytes()
    vid = hashlib.sha256(data).hexdigest()
    repo.storage.write(f"datasets/odd/manifests/{vid}.arrow", data)
    repo.storage.write("datasets/odd/refs/latest", json.dumps({"version": vid, "seq": 1})
                       .encode())
    return vid


@pytest.mark.parametrize("schema", [
    pa.schema([("x", pa.int64())]),
    pa.schema([("x", pa.int64()), ("__key__", pa.string())]),
    pa.schema([("__key__", pa.int64()), ("x", pa.int64())]),
    pa.schema([]),
])
def test_a_manifest_whose_schema_lacks_the_key_first_is_refused(
        tmp_path: Path, schema: pa.Schema) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("good", [(f"k{i}", {"x": i}) for i in range(5)])
    _with_schema(repo, "good", schema)
    with pytest.raises(dl.IntegrityError, match=r"__key__.*not written by dload or is corrupt"):
        repo.dataset("odd").get("k1")


def test_a_fifo_in_place_of_a_log_entry_is_left_out_and_warned(tmp_path: Path) -> None:
    """QA review65c: a FIFO among a dataset's log entries failed `log` and every SQL query
    (a malformed entry was already left out, warned)."""
    root = tmp_path / "r"
    repo = dl.Repository.open(str(root), cache_dir=str(tmp_path / "c"))
    repo.commit("a", [("k", {"x": 1})])
    repo.commit("b", [("k", {"x": 2})])
    os.mkfifo(root / "datasets" / "a" / "log" / "latest" / "000000000009.json")
    with pytest.warns(UserWarning, match="not a regular file"):
        names = repo.sql("SELECT DISTINCT name FROM log ORDER BY name").column(0)
    assert names.to_pylist() == ["a", "b"]
    with pytest.warns(UserWarning, match="not a regular file"):
        assert [e.version for e in dl.Repository.open(str(root), cache_dir=str(
            tmp_path / "c")).log("a")] == [repo.dataset("a").version]


def test_verify_names_a_directory_in_place_of_a_shard(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA review65c: a shard path that is a directory made `verify --delete-bad` speak of
    write permission (run it as a user who has it); it is a directory, removed by hand."""
    root = str(tmp_path / "r")
    repo = dl.Repository.open(root, cache_dir=str(tmp_path / "c"))
    repo.commit("a", [("k", {"x": 1})])
    shard = next(p for p in (tmp_path / "r" / "shards").rglob("*.parquet"))
    shard.unlink()
    shard.mkdir()
    (shard / "notes.txt").write_text("mine")
    run: RunFn = runner(capsys, ["--root", root, "--cache-dir", str(tmp_path / "c2")])
    r = run("verify", "a", "--delete-bad", rc=1)
    assert "bytes hash to nothing: it is a directory, not a regular file\n" in r.out
    assert "it is a directory, which no dload object is" in r.err
    assert r.err.rstrip().endswith("remove them by hand") and "permission" not in r.err
    assert (shard / "notes.txt").read_text() == "mine"
    with pytest.raises(dl.StorageError, match="a directory is in its place, which no dload "
                       "object is"):  # (QA review66b: "point the root at a directory...")
        repo.commit("b", [("k", {"x": 1})])


def test_init_warns_when_a_variable_or_a_project_file_overrides_what_it_wrote(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """QA roots65: `dload init --root X` said only "wrote ...: set root=X" while DLOAD_ROOT (or
    the project's dload.toml) kept every command on another root."""
    run: RunFn = runner(capsys)
    assert "warning" not in run("init", "--root", str(tmp_path / "a")).err
    monkeypatch.setenv("DLOAD_ROOT", str(tmp_path / "env"))
    r = run("init", "--root", str(tmp_path / "b"), "--cache-budget", "1GB")
    assert "does not apply here: env DLOAD_ROOT overrides it" in r.err
    assert "cache_budget" not in r.err
    monkeypatch.delenv("DLOAD_ROOT")
    run("init", "--project", "--root", str(tmp_path / "p"))
    r = run("init", "--root", str(tmp_path / "c"))
    assert f"root as written in {tmp_path}" in r.err
    assert f"{Path('dload.toml').resolve()} overrides it" in r.err
    assert "warning" not in run("init", "--project", "--root", str(tmp_path / "q")).err


def test_ls_and_sql_with_a_root_as_the_cache_dir_write_nothing_into_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA roots65: reads refuse a root given as --cache-dir, but `ls` and `sql` wrote a
    manifests/ folder of copies into it."""
    a, b = str(tmp_path / "a"), tmp_path / "b"
    dl.Repository.open(a, cache_dir=str(tmp_path / "c")).commit("x", [("k", {"v": 1})])
    dl.Repository.open(str(b), cache_dir=str(tmp_path / "c")).commit("y", [("k", {"v": 2})])
    before = sorted(p.name for p in b.iterdir())
    run: RunFn = runner(capsys, ["--root", a, "--cache-dir", str(b)])
    assert "x" in run("ls").out
    assert "x" in run("sql", "SELECT name FROM versions").out
    assert sorted(p.name for p in b.iterdir()) == before and "manifests" not in before


@pytest.mark.parametrize(("rows", "said"), [
    ([{"ann": [{"box": [1.0, 2.0], "seg": [[1.0, 2.0, 3.0]]}]},
      {"ann": [{"box": [1.0, 2.0], "seg": {"counts": [1, 2], "size": [4, 4]}}]}],
     "ann[0].seg is a dict (a struct) where earlier values have a list"),
    ([{"x": {"y": [1]}}, {"x": {"y": [[1]]}}], "x.y[0] is a list where earlier values have a "
     "number"),
    ([{"x": 1}, {"x": "s"}], "x is text where earlier values have a number"),
])
def test_a_value_of_another_shape_is_named_by_its_path(
        tmp_path: Path, rows: list[dict[str, object]], said: str) -> None:
    """QA detect62: COCO's RLE segmentation (a dict) beside polygons (lists) was refused
    with pyarrow's words (cannot mix list and non-list), naming no field."""
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    with pytest.raises(dl.SchemaError, match=r"^sample 'k1', column '\w+': .*") as e:
        repo.commit("coco", [(f"k{i}", r) for i, r in enumerate(rows)])
    assert f"({said})" in str(e.value)
