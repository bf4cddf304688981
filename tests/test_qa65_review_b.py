"""QA review65b, a review of this session's fixes: rm deleted a folder nested in the dataset's
folder (gc then deleted its shards); copies merged into a dataset's folder, their dataset
removed, got advice that deleted the dataset; pad_collate(dtype=) gave values the dtype cannot
hold back as lists; a list view of structs of string views committed but did not append; a
torch tensor into a typed column, a list of np.float32 into float16; a shuffle hint smaller
than a row; the catalog said it left out a folder whose own versions it kept."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

import dload_arrow as dl


def test_rm_and_gc_keep_a_backup_nested_in_the_folder(local_root: str, tmp_path: Path) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("p1", pa.table({"__key__": ["a", "b"], "x": [1, 2]}))
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p1.bak")
    repo.rm("p1")
    shutil.move(f"{local_root}/datasets/p1.bak", f"{local_root}/datasets/p1")  # nested
    with pytest.raises(dl.NotFoundError, match=r"datasets/p1/p1\.bak .* merge them"):
        dl.Repository.open(local_root).dataset("p1")
    repo = dl.Repository.open(local_root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        repo.commit("p1", pa.table({"__key__": ["z"], "x": [9]}))
    with pytest.raises(dl.InvalidNameError, match=r"rm of 'p1' does not run .*copy only its "
                       r"manifests into datasets/p1/manifests/.*dload tag p1@VERSION backup"):
        repo.rm("p1")
    backups = list(Path(local_root, "datasets/p1/p1.bak/manifests").glob("*.arrow"))
    for f in backups:  # the advice
        shutil.copy(f, Path(local_root, "datasets/p1/manifests"))
    shutil.rmtree(f"{local_root}/datasets/p1/p1.bak")
    repo.tag("p1", backups[0].stem, "backup")
    repo.gc(grace=0)
    assert repo.dataset("p1", "backup").to_arrow().column("x").to_pylist() == [1, 2]
    assert repo.dataset("p1").to_arrow().column("x").to_pylist() == [9]


def test_copies_merged_into_a_dataset_whose_source_was_removed(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("p1", pa.table({"__key__": ["a"], "x": [1]}))
    repo.commit("q", pa.table({"__key__": ["a"], "y": [1.5]}))
    (copied,) = Path(local_root, "datasets/p1/manifests").iterdir()
    shutil.copy(copied, Path(local_root, "datasets/q/manifests", copied.name))
    repo.rm("p1")
    with pytest.raises(dl.InvalidNameError, match=rf"a copy of 'p1''s version merged into the "
                       rf"folder of dataset 'q': remove datasets/q/manifests/{copied.name}"):
        dl.Repository.open(local_root).versions("q")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        names = repo.sql("SELECT name FROM versions").column("name").to_pylist()
    assert names == ["q"] and any("manifests in the folder of 'q'" in str(w.message)
                                  for w in seen)


def test_pad_collate_dtype_refuses_values_it_cannot_hold_in_rows_of_rows() -> None:
    pc = dl.pad_collate(columns=["r"], dtype={"r": "int8"})
    with pytest.raises(dl.ConfigError, match="cannot make an array of int8"):
        pc([{"r": [[1, 2], [300, 1]]}, {"r": [[4, 5]]}])
    assert pc([{"r": [[1, 2], [3, 1]]}, {"r": [[4, 5]]}])["r"].dtype == np.int8


def test_a_list_view_of_structs_of_string_views_appends(repo: dl.Repository) -> None:
    typ = pa.list_view(pa.struct([("s", pa.string_view())]))
    repo.commit("lv", pa.table({"__key__": ["a"], "c": pa.array([[{"s": "a"}]], typ)}))
    repo.append("lv", pa.table({"__key__": ["b"], "c": pa.array([[{"s": "b"}], None], typ)[:1]}))
    assert [r["c"] for r in repo.dataset("lv").samples()] == [[{"s": "a"}], [{"s": "b"}]]


def test_tensors_and_float32_lists_into_typed_columns(repo: dl.Repository) -> None:
    repo.commit("v", [("a", {"v": [1.0, 2.0]})])
    with pytest.raises(dl.SchemaError, match=r"is a torch tensor, .*: give its numpy array"):
        repo.append("v", [("b", {"v": torch.zeros(2)})])
    with pytest.raises(dl.SchemaError, match=r"is a torch tensor, .*: give its numpy array"):
        repo.commit("w", [("a", {"v": torch.zeros(2)})],
                    schema=pa.schema([("v", pa.list_(pa.float32()))]))
    emb = np.array([0.5, 0.25], np.float32)
    repo.commit("h", [("a", {"v": list(emb)})], schema=pa.schema([("v", pa.list_(pa.float16()))]))
    assert repo.dataset("h").get("a")["v"] == [0.5, 0.25]


def test_no_buffer_is_offered_smaller_than_a_row(repo: dl.Repository,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit("big", [(f"v{i}", {"image": np.full(262_144, i, np.float32)}) for i in range(8)],
                row_group_size="2MB")
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "5MB")
    with pytest.warns(UserWarning, match="no buffer fits beside the rows held: read fewer") as w:
        repo.dataset("big").shuffle(1, seed=0)
    assert not any("shuffle('" in str(x.message) and "e.g." in str(x.message) for x in w)
