"""QA review63b, of this session's fixes: pad_collate leaves text lists (a batch of [None]s
too) and fixed-size embeddings as batch() gives them; the categorical warning judges a whole
table and no append; the schema= advice for ids past int64 matches the lists' depth; a label
file whose name holds a digit (train2017.txt, labels_v2.txt) is still warned of."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow import Repository
from dload_arrow.errors import SchemaError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_text_lists_and_embeddings_are_not_padded(repo: Repository) -> None:
    repo.commit("t", pa.table({
        "__key__": ["a", "b", "c", "d"],
        "tags": pa.array([["cat", None], ["dog"], [None], []], pa.list_(pa.string())),
        "ids": pa.array([[1, 2, 3], [4], [], None], pa.list_(pa.int32())),
        "emb": pa.array([[0.5] * 4] * 4, pa.list_(pa.float32(), 4))}), progress=False)
    pipe = repo.dataset("t").pipeline()
    for kw in ({}, {"max_length": 2}):
        for b in pipe.batch(2, collate=dl.pad_collate(**kw)):
            assert sorted(b) == ["__key__", "emb", "ids", "ids_length", "tags"]
            assert isinstance(b["tags"], list)
            assert b["emb"].dtype == np.float32 and b["emb"].shape == (2, 4)
    mapped = list(pipe.map(lambda r: {"tags": r["tags"]}).batch(2, collate=dl.pad_collate(
        columns=[])))  # (after a map no stored type says: columns= does)
    assert mapped == [{"tags": [["cat", None], ["dog"]]}, {"tags": [[None], []]}]
    typed = next(iter(pipe.skip(2).map(lambda r: {"tags": r["tags"]}).batch(
        2, collate=dl.pad_collate(dtype={"tags": "int64"}))))
    assert typed["tags"].tolist() == [[0], [0]]  # dtype= names the column: numbers


def test_categorical_warning_judges_the_whole_table(repo: Repository) -> None:
    arr = pa.array(["a", "a", "b", "a"]).dictionary_encode()
    two = pa.Table.from_batches([pa.record_batch({"c": arr.slice(0, 2)}),
                                 pa.record_batch({"c": arr.slice(2, 2)})])
    cat = pd.CategoricalDtype(["p", "q"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.commit("e", two, progress=False)
        repo.commit("f", pd.DataFrame({"c": pd.Series(["p", "q"], dtype=cat)}), progress=False)
        repo.append("f", pd.DataFrame({"c": pd.Series(["q", "p"], dtype=cat)}), progress=False)
    back = repo.dataset("f").to_pandas()["c"]
    assert back.cat.codes.tolist() == [0, 1, 1, 0]
    late = pa.Table.from_batches([pa.record_batch({"c": arr.slice(2, 2)}),
                                  pa.record_batch({"c": arr.slice(0, 2)})])
    with pytest.warns(UserWarning, match=r"\.cat\.codes\) change") as seen:
        repo.commit("g", late, progress=False)
    assert seen[0].filename == __file__
    c = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()),
                                       pa.array(["a", "b"], pa.string_view()))
    t = pa.table({"__key__": ["r0", "r1"], "c": c})
    for data in (t, pa.RecordBatchReader.from_batches(t.schema, t.to_batches())):
        with pytest.warns(UserWarning, match=r"\.cat\.codes\) change"):
            repo.commit("h", data, progress=False)


@pytest.mark.parametrize("col,typ", [
    ([[2**63 + 1, 5], [7]], pa.list_(pa.uint64())),
    ([[[2**63 + 1]], [[7]]], pa.list_(pa.list_(pa.uint64()))),
    ([None, [None, [2**63 + 1]]], pa.list_(pa.list_(pa.uint64()))),
])
def test_the_uint64_advice_matches_the_depth(repo: Repository, col: list, typ: pa.DataType
                                             ) -> None:
    df = pd.DataFrame({"ids": col})
    with pytest.raises(SchemaError) as e:
        repo.commit("x", df, progress=False)
    advice = re.search(r"schema=(pa\.schema\(.*\]\))", str(e.value))
    assert advice is not None
    schema = eval(advice.group(1), {"pa": pa})
    assert schema.field("ids").type == typ
    repo.commit("x", df, schema=schema, progress=False)
    assert repo.dataset("x").to_arrow().column("ids").to_pylist() == col


@pytest.mark.parametrize("keys,extra", [
    ([f"img_{i:04d}" for i in range(1, 21)], "labels_v2.txt"),
    ([f"{i:012d}" for i in range(1, 21)], "train2017.txt"),
])
def test_a_label_file_named_with_a_digit_is_warned(tmp_path: Path, run: RunFn,
                                                   keys: list[str], extra: str) -> None:
    d = tmp_path / "src"
    d.mkdir()
    for k in keys:
        (d / f"{k}.jpg").write_bytes(b"JPEG")
        (d / f"{k}.txt").write_text("a caption")
    (d / extra).write_text("img_0001.jpg,cat\n")
    assert "A table of labels" in run("commit", "caps", "--from", str(d)).err


def _tokens(repo: Repository) -> None:
    repo.commit("t", pa.table({"__key__": list("abcdef"), "ids": pa.array(
        [[1, 2], [3], [None], [None, None], [], []], pa.list_(pa.int32()))}), progress=False)


def test_a_collate_fn_pads_batches_of_nulls_when_dtype_says(repo: Repository) -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from dload_arrow.torch import as_iterable_dataset

    _tokens(repo)  # (a collate_fn sees no stored type: a batch of nulls says nothing)
    plain = list(DataLoader(as_iterable_dataset(repo.dataset("t").pipeline()), batch_size=2,
                            collate_fn=dl.pad_collate()))
    assert isinstance(plain[0]["ids"], torch.Tensor) and plain[1]["ids"] == [[None],
                                                                             [None, None]]
    got = list(DataLoader(as_iterable_dataset(repo.dataset("t").pipeline()), batch_size=2,
                          collate_fn=dl.pad_collate(dtype={"ids": "int32"})))  # it does
    assert [sorted(b) for b in got] == [["__key__", "ids", "ids_length"]] * 3
    assert [b["ids_length"].tolist() for b in got] == [[2, 1], [1, 2], [0, 0]]
    assert got[1]["ids"].tolist() == [[0, 0], [0, 0]] and str(got[1]["ids"].dtype).endswith(
        "int32")


def test_pad_collate_leaves_the_fingerprint_alone(repo: Repository) -> None:
    _tokens(repo)
    pc = dl.pad_collate()
    pipe = repo.dataset("t").pipeline().map(lambda r: r).batch(2, collate=pc)
    before = pipe.fingerprint()
    assert len(list(pipe)) == 3
    again = repo.dataset("t").pipeline().map(lambda r: r).batch(2, collate=pc)
    assert again.fingerprint() == before
