"""QA review66, a review of stop 55's last fixes: an append of nested list views into a list
view of lists lost its values (``[[5, 6]]`` stored as ``[[]]``) or crashed the process, and
nested view-to-view changes were refused with Arrow's internals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import dload_arrow as dl

LV, LLV, L, LL = pa.list_view, pa.large_list_view, pa.list_, pa.large_list
i64, i32 = pa.int64(), pa.int32()


@pytest.mark.parametrize(("stored", "first", "appended", "rows"), [
    (LV(L(i64)), [[[0]]], LLV(LLV(i64)), [[[5, 6]], [[7]], None, [[8, 9], []]]),
    (LV(L(i64)), [[[0]]], LV(LV(i64)), [[[5, 6]]]),
    (pa.struct([("a", LV(i64))]), [{"a": [0]}], pa.struct([("a", LV(i32))]), [{"a": [5]}]),
    (LV(pa.struct([("a", L(i64))])), [[{"a": [0]}]], LV(pa.struct([("a", LV(i64))])),
     [[{"a": [5, 6]}, {"a": [7]}]]),
    (LLV(L(i64)), [[[0]]], LV(LV(i64)), [[[5, 6]], [[7]]]),
    (LV(LL(i64)), [[[0]]], LV(LV(i64)), [[[5, 6]], [[7]]]),
    (L(LV(i64)), [[[0]]], L(LV(i32)), [[[5, 6]], [[7]]]),
])
def test_nested_list_views_append_with_their_values(
        tmp_path: Path, stored: pa.DataType, first: list[Any], appended: pa.DataType,
        rows: list[Any]) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("x", pa.table({"__key__": ["0"], "c": pa.array(first, stored)}))
    new = pa.array(rows, appended)
    repo.append("x", pa.table({"__key__": [f"k{i}" for i in range(len(rows))], "c": new}))
    got = [s["c"] for s in dl.Repository.open(str(tmp_path / "r"), cache_dir=str(
        tmp_path / "c2")).dataset("x").samples()]
    assert got == first + rows
    sliced = new.slice(1)  # (a view's offsets point into its whole child)
    if not len(sliced):
        return
    repo.append("x", pa.table({"__key__": [f"s{i}" for i in range(len(sliced))], "c": sliced}))
    assert [s["c"] for s in repo.dataset("x").samples()][len(got):] == rows[1:]


def test_a_table_folder_never_reads_an_old_root_inside_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA review66 F1: a folder of tables read an old dload root inside it as tables (its
    shards' rows committed beside the user's)."""
    import pyarrow.parquet as pq
    from cli_run import RunFn, runner

    from dload_arrow.ingest import open_table

    proj = tmp_path / "proj"
    proj.mkdir()
    pq.write_table(pa.table({"__key__": ["a", "b"], "v": [1, 2]}), proj / "events.parquet")
    dl.Repository.open(str(proj / "old"), cache_dir=str(tmp_path / "oc")).commit(
        "x", pa.table({"__key__": ["z"], "v": [99]}))
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("e", open_table(str(proj)))
    assert [s["__key__"] for s in repo.dataset("e").samples()] == ["a", "b"]
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "r"), "--cache-dir",
                                 str(tmp_path / "c")])
    run("commit", "e2", "--from", str(proj), "--include", "*.parquet")
    run("commit", "e3", "--from", str(proj), "--as", "table")
    for name in ("e2", "e3"):
        assert [s["__key__"] for s in repo.dataset(name).samples()] == ["a", "b"]
    for inner in (proj / "old", proj / "old" / "datasets", proj / "old" / "datasets" / "x"):
        with pytest.raises(dl.ConfigError, match="a dload root: its files are"):
            open_table(str(inner))


def test_another_roots_datasets_folder_and_an_untagged_cache_are_never_samples(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA review66 F5, F6: another local root's datasets/ given as --from was committed (its
    manifests and log entries, host names and all); a cache used only with a local root has
    no CACHEDIR.TAG and inside a committed folder was stored as samples."""
    from cli_run import RunFn, runner

    photos = tmp_path / "proj" / "photos"
    photos.mkdir(parents=True)
    (photos / "a.txt").write_text("hi")
    old = tmp_path / "proj" / "store"
    r1: RunFn = runner(capsys, ["--root", str(old), "--cache-dir",
                                str(tmp_path / "proj" / "mycache")])
    r1("commit", "x", "--from", str(photos))
    r1("head", "x")
    r1("verify", "x")
    assert not (tmp_path / "proj" / "mycache" / "CACHEDIR.TAG").exists()
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "new"), "--cache-dir",
                                 str(tmp_path / "c")])
    r = run("commit", "p", "--from", str(tmp_path / "proj"))
    assert "2 folders of dload's own data (a dload root or cache), not read" in r.err
    repo = dl.Repository.open(str(tmp_path / "new"), cache_dir=str(tmp_path / "c"))
    assert [s["__key__"] for s in repo.dataset("p").samples()] == ["photos/a"]
    for inner in (old / "datasets", old / "datasets" / "x", tmp_path / "proj" / "mycache"):
        err = run("commit", "q", "--from", str(inner), rc=1).err
        assert ("a dload root: its files are manifests" in err if "mycache" not in str(inner)
                else "a dload cache: its files are copies" in err)
    assert repo.datasets() == ["p"]


@pytest.mark.parametrize("backup", ["manifests.bak", "manifests/keep", "manifests.old/v",
                                    "manifests/.bak"])
def test_a_backup_of_a_datasets_manifests_stops_rm_and_gc(tmp_path: Path, backup: str) -> None:
    """QA review66 F7: `cp -r datasets/p1/manifests datasets/p1/manifests.bak` was deleted by
    `rm p1` without a word, and gc deleted the shards only its manifests referenced."""
    import shutil

    root = tmp_path / "r"
    repo = dl.Repository.open(str(root), cache_dir=str(tmp_path / "c"))
    repo.commit("p1", [("a", {"v": 1})])
    repo.commit("p1", [("b", {"v": 2})])
    first = repo.versions("p1")[-1]
    shutil.copytree(root / "datasets" / "p1" / "manifests", tmp_path / "copy")
    folder, _, rename = backup.partition("/") if backup.endswith(("/v", "/.bak")) else (
        backup, "", "")
    target = root / "datasets" / "p1" / folder
    target.mkdir(exist_ok=True)
    for i, f in enumerate(sorted((tmp_path / "copy").iterdir())):  # (QA review66b: names
        name = {"v": f"v{i}.arrow", ".bak": f.name + ".bak"}.get(rename, f.name)  # other than
        shutil.copy(f, target / name)  # ids, v1.arrow, x.arrow.bak)
    backup = folder
    assert [v.version for v in repo.versions("p1")][1:] == [first.version]
    with pytest.raises(dl.InvalidNameError, match=f"datasets/p1/{backup} .* holds copies of "
                       "manifests that are not versions of 'p1'"):
        repo.gc(grace=0)
    with pytest.raises(dl.InvalidNameError, match="rm of 'p1' does not run"):
        repo.rm("p1")
    assert len(list((root / "datasets" / "p1" / backup).glob("*.arrow*"))) >= 2
    for f in (root / "datasets" / "p1" / backup).glob("*.arrow*"):
        if backup == "manifests" and f.name.endswith(".arrow"):
            continue
        f.unlink()
    repo.rm("p1")
    assert repo.datasets() == []
