"""QA review65, a review of stop 54's last fixes: after `cp -r p1 p1.bak` and `dload rm p1`
the hint said "move it back to datasets/p1" (an rm leaves that folder: the `mv` nested the copy
there, the listing went silent and gc deleted its shards); a copied folder made `dload log`
fail for every dataset; a commit into a copied folder went through; a merging copy hid the
dataset it was merged into; a listing read every manifest a copy shares; a list view of
structs of string views failed in the Parquet writer."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def _root(local_root: str) -> dl.Repository:
    repo = dl.Repository.open(local_root)
    repo.commit("p1", pa.table({"__key__": ["a", "b", "c"], "x": pa.array([1, 2, 3], pa.uint8())}))
    repo.append("p1", pa.table({"__key__": ["d"], "x": pa.array([4], pa.uint8())}))
    repo.commit("q", pa.table({"__key__": ["a"], "y": [1.5]}))
    return repo


def test_a_backup_put_back_where_an_rm_left_the_folder(local_root: str) -> None:
    repo = _root(local_root)
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p1.bak")
    repo.rm("p1")
    with pytest.raises(dl.InvalidNameError, match=r"datasets/p1 is there, left by an rm .*"
                       r"`cp -r datasets/p1\.bak/\. datasets/p1/`.* a `mv` would put"):
        dl.Repository.open(local_root).dataset("p1.bak")
    shutil.move(f"{local_root}/datasets/p1.bak", f"{local_root}/datasets/p1")  # nested
    assert Path(local_root, "datasets/p1/p1.bak/manifests").is_dir()
    fresh = dl.Repository.open(local_root)
    with pytest.warns(UserWarning, match=r"datasets/p1/p1\.bak .* inside the folder of 'p1'"):
        assert fresh.datasets() == ["q"]
    with pytest.raises(dl.InvalidNameError, match=r"datasets/p1/p1\.bak .* gc does not run"):
        fresh.gc(grace=0)
    shutil.copytree(f"{local_root}/datasets/p1/p1.bak", f"{local_root}/datasets/p1",
                    dirs_exist_ok=True)  # the merge the message gives
    shutil.rmtree(f"{local_root}/datasets/p1/p1.bak")
    back = dl.Repository.open(local_root)
    assert back.datasets() == ["p1", "q"] and back.dataset("p1").num_rows == 4
    assert back.gc(grace=0).deleted == []


def test_log_of_any_dataset_beside_a_copied_folder(local_root: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _root(local_root)
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p1.bak")
    run: RunFn = runner(capsys, ["--root", local_root])
    r = run("log", "q")
    assert "q @ " in r.out and "leaves out manifests in the folder of 'p1.bak'" in r.err
    r = run("log", "p1")
    assert "<- 1 append" in r.out


def test_a_commit_into_a_copied_or_renamed_folder_is_refused(local_root: str) -> None:
    repo = _root(local_root)
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p1.bak")
    shutil.move(f"{local_root}/datasets/q", f"{local_root}/datasets/q2")
    new = pa.table({"__key__": ["z"], "x": pa.array([9], pa.uint8())})
    for name, hint in (("p1.bak", "move it out of the root"), ("q2", "move it back")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no "another writer" warning either)
            with pytest.raises(dl.InvalidNameError, match=rf"datasets/{name} holds .*{hint}"):
                repo.commit(name, new)
    assert len(list(Path(local_root, "datasets/p1.bak/manifests").iterdir())) == 2


def test_copies_merged_into_a_datasets_folder(local_root: str) -> None:
    repo = _root(local_root)
    q = repo.dataset("q").version
    for f in Path(local_root, "datasets/p1/manifests").iterdir():  # a merging copy
        shutil.copy(f, Path(local_root, "datasets/q/manifests", f.name))
    with pytest.warns(UserWarning, match=r"dataset 'q' .* holds 2 manifest\(s\) copied from "
                                         r"'p1'.* remove them \(datasets/q/manifests/"):
        assert dl.Repository.open(local_root).datasets() == ["p1", "q"]
    assert dl.Repository.open(local_root).dataset("q").version == q


def test_a_listing_reads_one_manifest_a_copied_folder(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("p1", pa.table({"__key__": ["a"], "x": [0]}))
    for i in range(1, 8):
        repo.append("p1", pa.table({"__key__": [f"k{i}"], "x": [i]}))
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p1.bak")
    storage = dl.Repository.open(local_root).storage
    reads: list[str] = []
    read = storage.read
    storage.read = lambda path, *a, **k: (reads.append(path), read(path, *a, **k))[1]  # type: ignore[method-assign]
    from dload_arrow.repository.missing import published_names

    with pytest.warns(UserWarning, match="p1.bak"):
        assert published_names(storage, "here") == ["p1"]
    assert sum("/manifests/" in p for p in reads) == 1


@pytest.mark.parametrize("typ", [pa.list_view(pa.struct([("s", pa.string_view())])),
                                 pa.large_list_view(pa.struct([("s", pa.string_view())]))])
def test_a_list_view_of_structs_of_string_views(repo: dl.Repository, typ: pa.DataType) -> None:
    col = pa.array([[{"s": "a"}], None, [{"s": "b"}, {"s": "c"}]], typ)
    table = pa.table({"__key__": ["a", "n", "b"], "c": col})
    repo.commit("lv", table.slice(1))
    got = [r["c"] for r in repo.dataset("lv").samples()]
    assert got == [None, [{"s": "b"}, {"s": "c"}]]
    assert "string_view" not in str(repo.dataset("lv").schema.field("c").type)
