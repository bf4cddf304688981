"""QA review66c, a review of this session's later fixes: masked numpy frames lost their mask
through the new buffer path, a null in a float frame became NaN in torch, an endless
pipeline with length= warned every epoch, a derive's memo folder was read as samples, and a
stale local copy named the owner of a version removed elsewhere."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

import dload_arrow as dl
from dload_arrow.torch import as_iterable_dataset
from dload_arrow.torch.values import value_to_torch


def test_masked_frames_keep_their_nulls(tmp_path: Path) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    frames = np.ma.array(np.array([[1, 2], [3, 4]], np.uint8), mask=[[0, 1], [0, 0]])
    repo.commit("m", [("a", {"v": frames})],
                schema=pa.schema([("v", pa.list_(pa.list_(pa.uint8(), 2)))]))
    assert repo.dataset("m").to_arrow().column("v").to_pylist() == [[[1, None], [3, 4]]]


def test_a_null_in_a_float_frame_is_no_nan() -> None:
    got = value_to_torch([[1.0, None], [3.0, 4.0]], (-1, 2), torch.float32)
    assert got == [[1.0, None], [3.0, 4.0]]
    nan = value_to_torch([[1.0, float("nan")]], (-1, 2), torch.float32)
    assert isinstance(nan, torch.Tensor) and bool(torch.isnan(nan[0, 1]))


def test_an_endless_pipeline_cut_at_length_is_not_warned_of() -> None:
    pipe = dl.from_iterable(lambda: iter(range(10**9)), finite=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = list(as_iterable_dataset(pipe, length=5, to_tensors=False))
    assert got == [0, 1, 2, 3, 4]


def test_a_roots_derive_memos_are_not_samples(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_run import RunFn, runner

    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("a", [("k", {"x": 1})])
    repo.derive("b", repo.dataset("a").pipeline().map(lambda r: r))
    derived = tmp_path / "r" / "derived"
    assert derived.is_dir()
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "o"), "--cache-dir",
                                 str(tmp_path / "c2")])
    assert "a dload root: its files are" in run("commit", "q", "--from", str(derived),
                                                  rc=1).err


def test_a_stale_copy_does_not_name_a_removed_versions_owner(tmp_path: Path) -> None:
    root = str(tmp_path / "r")
    repo = dl.Repository.open(root, cache_dir=str(tmp_path / "c"))
    gone = repo.commit("b", [("k", {"x": 1})])
    repo.commit("a", [("k", {"x": 2})])
    repo.dataset("b").to_arrow()  # a copy of b's manifest in this cache
    other = dl.Repository.open(root, cache_dir=str(tmp_path / "c2"))
    other.rm("b")
    shutil.rmtree(tmp_path / "r" / "shards", ignore_errors=True)
    fresh = dl.Repository.open(root, cache_dir=str(tmp_path / "c"))
    with pytest.raises(dl.NotFoundError) as e:
        fresh.dataset("a", gone.version)
    assert "is a version of 'b'" not in str(e.value)
