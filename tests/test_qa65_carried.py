"""Carried findings fixed in stop 55: a half-copied folder under ``datasets/`` stops gc with
the stray-folder advice (QA review64i: gc's corrupt-manifest advice, an rm, failed in its
turn); rows of rows of two lengths keep their keys (review64i); a guarded commit's rerun
after it published (QA etl63)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import dload_arrow as dl


def test_gc_names_a_half_copied_folder(repo: dl.Repository, local_root: str) -> None:
    repo.commit("p1", pa.table({"__key__": ["a"], "x": [1]}))
    repo.append("p1", pa.table({"__key__": ["b"], "x": [2]}))
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p1.bak")
    bad = sorted(Path(local_root, "datasets/p1.bak/manifests").iterdir())[0]
    bad.write_bytes(bad.read_bytes()[:50])  # a copy stopped half way
    with pytest.raises(dl.InvalidNameError,
                       match=r"datasets/p1\.bak .* copies of those of 'p1' .* gc does not run; "
                             r"move it out of the root"):
        repo.gc(dry_run=True)
    shutil.rmtree(f"{local_root}/datasets/p1.bak")
    assert repo.gc(dry_run=True).deleted == []
    own = sorted(Path(local_root, "datasets/p1/manifests").iterdir())[0]
    own.write_bytes(own.read_bytes()[:50])  # the dataset's own damaged manifest: rm advice
    with pytest.raises(dl.IntegrityError, match=r"dload rm p1 --version"):
        repo.gc(dry_run=True)


def test_rows_of_rows_of_two_lengths_have_the_same_keys_in_every_batch() -> None:
    """QA review64i: without a stored type (after a map, a DataLoader's collate_fn), rows of
    rows ragged within a row had no _length/_mask while other batches had them."""
    import warnings

    for pc in (dl.pad_collate(mask=True), dl.pad_collate(mask=True, dtype={"r": "int64"}),
               dl.pad_collate(mask=True, columns=["r"])):
        keys = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for batch in ([{"r": [[1, 2], [3, 4]]}, {"r": [[5, 6]]}],  # one width: padded
                          [{"r": [[1, 2]]}, {"r": [[3, 4, 5]]}],  # two widths across rows
                          [{"r": [[1, 2], [3]]}, {"r": [[4]]}]):  # two within a row
                got = pc(batch)
                keys.append(sorted(got))
        assert keys == [["r", "r_length", "r_mask"]] * 3, pc
        assert got["r"] == [[[1, 2], [3]], [[4]]] and got["r_length"].tolist() == [2, 1]
        assert got["r_mask"].tolist() == [[True, True], [True, False]]
    assert sorted(dl.pad_collate()([{"t": [["a"], ["b", "c"]]}])) == ["t"]  # text: as given


def test_a_stored_ragged_column_named_in_columns(repo: dl.Repository) -> None:
    """QA review64i: naming a stored list<list<T>> in columns= failed at its first batch of
    two widths (mid-epoch); rows ragged within a row became lists without the warning."""
    import warnings

    repo.commit("s", pa.table({"__key__": list("abcdef"), "sents2": pa.array(
        [[[1, 2]], [[3, 4]], [[1, 2], [3]], [[4]], [[1, 2]], [[3, 4, 5]]],
        pa.list_(pa.list_(pa.int32())))}))
    pipe = repo.dataset("s").pipeline()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = list(pipe.batch(2, collate=dl.pad_collate(columns=["sents2"])))
    assert got[0]["sents2"].tolist() == [[[1, 2]], [[3, 4]]]
    assert got[1]["sents2"] == [[[1, 2], [3]], [[4]]]
    assert got[2]["sents2"] == [[[1, 2]], [[3, 4, 5]]]
    assert {tuple(sorted(b)) for b in got} == {("__key__", "sents2", "sents2_length")}
    assert any("column 'sents2'" in (t := str(w.message)) and "gives it as a list" in t
               for w in seen)
    repo.commit("s3", pa.table({"__key__": list("ab"), "sents3": pa.array(
        [[[1, 2], [3]], [[4]]], pa.list_(pa.list_(pa.int32())))}))
    with pytest.warns(UserWarning, match="'sents3' holds rows of rows of two lengths"):
        (b,) = repo.dataset("s3").pipeline().batch(2, collate=dl.pad_collate())  # within a row
    assert b["sents3"] == [[[1, 2], [3]], [[4]]] and b["sents3_length"].tolist() == [2, 1]


def test_a_guarded_commits_rerun_after_it_published(repo: dl.Repository) -> None:
    """QA etl63: `commit --if-latest V` retried after it published was refused (latest had
    moved, to its own result); the same samples are a no-op now, other samples refused."""
    v = repo.commit("t", pa.table({"__key__": ["a"], "x": [1]})).version
    new = pa.table({"__key__": ["a"], "x": [2]})
    w = repo.commit("t", new, if_latest=v).version
    assert repo.commit("t", new, if_latest=v).version == w  # the rerun: already published
    with pytest.raises(dl.ConflictError, match=rf"if_latest .* {v[:12]}: latest is now {w[:12]}"):
        repo.commit("t", pa.table({"__key__": ["a"], "x": [3]}), if_latest=v)
    assert repo.dataset("t").version == w and len(repo.versions("t")) == 2
    repo.append("t", pa.table({"__key__": ["b"], "x": [4]}))  # an append moved it: refused
    with pytest.raises(dl.ConflictError, match="latest is now"):
        repo.commit("t", new, if_latest=v)
