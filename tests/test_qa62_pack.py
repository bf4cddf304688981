"""QA pack62: ``pack`` keeps the tokens' type around empty documents and widens for a
separator it cannot hold; an old state without dataset versions loaded with strict=False
warns."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.errors import SchemaError


@pytest.fixture()
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("kind", [pa.int8(), pa.int32(), pa.uint16(), pa.uint64()])
def test_an_empty_or_null_document_with_a_separator_keeps_the_stored_type(
        repo: dl.Repository, kind: pa.DataType) -> None:
    docs = [[1, 2, 3], [], [4, 5], None, [6]]
    repo.commit("docs", [(f"d{i}", {"ids": d}) for i, d in enumerate(docs)],
                schema=pa.schema([("ids", pa.list_(kind))]), progress=False)
    rows = list(repo.dataset("docs").pipeline().pack(4, "ids", separator=0))
    assert {r["ids"].dtype for r in rows} == {np.dtype(kind.to_pandas_dtype())}
    assert np.concatenate([r["ids"] for r in rows]).tolist() == [
        1, 2, 3, 0, 0, 4, 5, 0, 0, 6, 0]


def test_an_empty_document_after_a_map_takes_its_neighbours_type(
        repo: dl.Repository) -> None:
    repo.commit("docs", [(f"d{i}", {"n": n}) for i, n in enumerate([3, 0, 2, 0, 0, 4])],
                progress=False)
    pipe = repo.dataset("docs").pipeline().map(
        lambda r: {"ids": np.arange(1, r["n"] + 1, dtype=np.int32)}).pack(5, "ids",
                                                                          separator=9)
    rows = list(pipe)
    assert {r["ids"].dtype for r in rows} == {np.dtype(np.int32)}
    assert np.concatenate([r["ids"] for r in rows]).tolist() == [
        1, 2, 3, 9, 9, 1, 2, 9, 9, 9, 1, 2, 3, 4, 9]


def test_a_separator_beyond_the_tokens_type_after_a_map_widens_them(
        repo: dl.Repository) -> None:
    repo.commit("docs", [(f"d{i}", {"text": "ab" * (i + 1)}) for i in range(3)],
                progress=False)
    pipe = repo.dataset("docs").pipeline().map(
        lambda r: {"ids": np.frombuffer(r["text"].encode(), np.uint8)}).pack(
            8, "ids", separator=256)
    rows = list(pipe)
    assert {r["ids"].dtype for r in rows} == {np.dtype(np.uint16)}
    assert np.concatenate([r["ids"] for r in rows]).tolist() == [
        97, 98, 256, 97, 98, 97, 98, 256, 97, 98, 97, 98, 97, 98, 256]
    neg = repo.dataset("docs").pipeline().map(
        lambda r: {"ids": np.array([2**63], np.uint64)}).pack(8, "ids", separator=-1)
    with pytest.raises(SchemaError, match=r"pack\(separator=-1\): column 'ids' holds uint64 "
                                          "token ids, and no integer type holds both"):
        list(neg)


def test_an_unversioned_state_loaded_with_strict_false_warns(repo: dl.Repository) -> None:
    repo.commit("docs", [(f"d{i:03d}", {"ids": [i] * 3}) for i in range(50)], progress=False)
    it = iter(repo.dataset("docs").shuffle(seed=0).pack(8, "ids"))
    next(it)
    state = {k: v for k, v in it.state_dict().items() if k != "datasets"}  # an older one's
    it.close()
    repo.append("docs", [(f"e{i:03d}", {"ids": [100 + i] * 3}) for i in range(5)],
                progress=False)
    later = repo.dataset("docs").shuffle(seed=0).pack(8, "ids")
    with pytest.warns(UserWarning, match=r"strict=False\): this state records no dataset "
                                         r"versions .* this pipeline reads docs@") as seen:
        later.load_state_dict(state, strict=False)
    assert seen[0].filename == __file__  # pointed at the caller's line
    same = repo.dataset("docs").shuffle(seed=0).pack(8, "ids")
    it = iter(same)
    next(it)
    mine = it.state_dict()
    it.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its own fingerprint, or versions recorded: silent
        repo.dataset("docs").shuffle(seed=0).pack(8, "ids").load_state_dict(
            {k: v for k, v in mine.items() if k != "datasets"}, strict=False)
        repo.dataset("docs").shuffle(seed=0).pack(8, "ids").load_state_dict(mine,
                                                                            strict=False)
