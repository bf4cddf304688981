"""QA migrate59: variable-length token lists batched as lists of lists, and every porter wrote
the same padding collate: ``pad_collate`` pads them into arrays (tensors under torch)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dload_arrow as dl
from dload_arrow.errors import ConfigError


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=7)),
                     min_size=1, max_size=6),
       pad=st.integers(-9, 9), cut=st.one_of(st.none(), st.integers(1, 8)))
def test_every_row_is_its_values_then_the_pad(rows: list[Any], pad: int,
                                              cut: int | None) -> None:
    items = [{"__key__": f"k{i}", "tokens": r, "label": i} for i, r in enumerate(rows)]
    got = dl.pad_collate(pad_value=pad, max_length=cut, mask=True, columns=["tokens"])(items)
    kept = [min(len(r or []), cut or len(r or [])) for r in rows]
    width = cut or max(kept)
    assert got["tokens"].shape == (len(rows), width)
    for i, r in enumerate(rows):
        r = r or []
        assert got["tokens"][i, :kept[i]].tolist() == r[:kept[i]]
        assert (got["tokens"][i, kept[i]:] == pad).all()
        assert got["tokens_mask"][i].tolist() == [j < kept[i] for j in range(width)]
    assert got["tokens_length"].tolist() == kept
    assert got["label"].tolist() == list(range(len(rows)))  # the rest as the default collate


def test_padding_through_a_loader_with_workers_and_a_resume(local_root: str) -> None:
    import dload_arrow.torch as dt

    repo = dl.Repository.open(local_root)
    repo.commit("tok", [(f"d{i:02d}", {"tokens": list(range(i % 5 + 1)), "f": [0.5] * (i % 3)})
                        for i in range(20)], progress=False)
    pipe = repo.dataset("tok").pipeline().shuffle(seed=1).batch(
        4, collate=dl.pad_collate(columns=["tokens"]))
    ds = dt.as_iterable_dataset(pipe)
    loader = dt.StatefulLoader(ds, num_workers=2)
    seen: list[str] = []
    state = None
    for i, b in enumerate(loader):
        assert b["tokens"].dtype.is_floating_point is False and b["tokens"].dim() == 2
        assert b["tokens"].shape[1] == int(b["tokens_length"].max())
        assert isinstance(b["f"], list)  # not asked for: as the default collate gives it
        seen += b["__key__"]
        if i == 1:
            state = loader.state_dict()
            break
    again = dt.StatefulLoader(dt.as_iterable_dataset(pipe), num_workers=2)
    again.load_state_dict(state)
    rest = [k for b in again for k in b["__key__"]]
    assert sorted(seen + rest) == [f"d{i:02d}" for i in range(20)]


def test_bad_settings_and_columns_are_named() -> None:
    with pytest.raises(ConfigError, match="max_length"):
        dl.pad_collate(max_length=0)
    with pytest.raises(ConfigError, match="pad_value"):
        dl.pad_collate(pad_value="x")  # type: ignore[arg-type]
    items = [{"a": [1], "s": "text"}]
    with pytest.raises(ConfigError, match="no column 'b'"):
        dl.pad_collate(columns=["b"])(items)
    with pytest.raises(ConfigError, match="'s' holds str values"):
        dl.pad_collate(columns=["s"])(items)
    with pytest.raises(ConfigError, match="only numbers are padded"):
        dl.pad_collate(columns=["a"])([{"a": ["x", "y"]}])
    assert np.asarray(dl.pad_collate()([{"a": [1.5]}, {"a": []}])["a"]).tolist() == [[1.5], [0]]


def test_by_default_only_columns_of_number_sequences_are_padded() -> None:
    items = [{"t": [1, 2], "tags": ["a", "b"], "m": [[1, 2], [3, 4]]},
             {"t": [3], "tags": ["c"], "m": [[5, 6]]},
             {"t": None, "tags": None, "m": None}]
    got = dl.pad_collate()(items)
    assert got["tags"] == [["a", "b"], ["c"], None]  # text lists: as the default collate
    assert got["t"].tolist() == [[1, 2], [3, 0], [0, 0]]
    # rows of frames (T, F) pad along T
    assert got["m"].shape == (3, 2, 2) and got["m"][1].tolist() == [[5, 6], [0, 0]]
    assert got["m_length"].tolist() == [2, 1, 0]
    # frames of two widths, named in columns= too: lists with their keys (QA review64i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (warned once per column and process)
        got = dl.pad_collate(columns=["m"])([{"m": [[1, 2]]}, {"m": [[1, 2, 3]]}])
    assert got["m"] == [[[1, 2]], [[1, 2, 3]]] and got["m_length"].tolist() == [1, 1]


def test_padding_keeps_the_stored_and_given_types(local_root: str) -> None:
    import pyarrow as pa

    repo = dl.Repository.open(local_root)
    repo.commit("a", pa.table({
        "tokens": pa.array([None, None, [1, 2], [3]], pa.list_(pa.int32())),
        "audio": pa.array([[0.5], [0.5, 1.0], None, [2.0]], pa.list_(pa.float32())),
        "y": pa.array([0.5] * 4, pa.float32())}), progress=False)
    batches = list(repo.dataset("a").pipeline().batch(2, collate=dl.pad_collate(mask=True)))
    for b in batches:  # the same keys in every batch, an all-null one too
        assert sorted(b) == ["__key__", "audio", "audio_length", "audio_mask", "tokens",
                             "tokens_length", "tokens_mask", "y"]
        assert (b["tokens"].dtype, b["audio"].dtype, b["y"].dtype) == (
            np.int32, np.float32, np.float32)
    assert batches[0]["tokens"].shape == (2, 0) and batches[1]["tokens"].tolist() == [[1, 2],
                                                                                       [3, 0]]
    frames = [{"a": np.ones((2, 3), np.float32)}, {"a": np.ones((1, 3), np.float32)}]
    got = dl.pad_collate()(frames)  # 2-D arrays: frames along their first axis
    assert got["a"].shape == (2, 2, 3) and got["a"].dtype == np.float32
    ids = dl.pad_collate()([{"a": np.array([2**63 + 5], np.uint64)}, {"a": np.array([],
                                                                                   np.uint64)}])
    assert ids["a"].dtype == np.uint64 and int(ids["a"][0, 0]) == 2**63 + 5
    with pytest.raises(ConfigError, match="beyond 2\\*\\*53"):
        dl.pad_collate()([{"a": [2**53 + 1]}, {"a": [0.5]}])
    with pytest.raises(ConfigError, match="does not fit"):
        dl.pad_collate(pad_value=-1)([{"a": np.ones(2, np.uint8)}])
    with warnings.catch_warnings():  # rows of rows of two lengths: lists (QA review64i)
        warnings.simplefilter("ignore")
        got = dl.pad_collate(columns=["a"])([{"a": [[1, 2], [3]]}])
    assert got["a"] == [[[1, 2], [3]]] and got["a_length"].tolist() == [2]
    with pytest.raises(ConfigError, match="rows of rows of two lengths"):
        dl.pad_collate(columns=["a"])([{"a": [["x", "y"], ["z"]]}])  # no numbers


def test_unsigned_ids_nan_pads_given_types_and_rows_holding_none(local_root: str) -> None:
    import pyarrow as pa
    import torch

    repo = dl.Repository.open(local_root)
    repo.commit("u", pa.table({
        "tok": pa.array([[1, 2], [3]], pa.list_(pa.uint16())),
        "ids": pa.array([[1, 2**63 + 5], [3]], pa.list_(pa.uint64())),
        "holes": pa.array([[1, None, 3], [4]], pa.list_(pa.int64()))}), progress=False)
    b = next(iter(repo.dataset("u").pipeline().batch(2, collate=dl.pad_collate())))
    assert b["tok"].dtype == np.uint16 and b["tok"].tolist() == [[1, 2], [3, 0]]
    assert b["ids"].dtype == np.uint64 and int(b["ids"][0, 1]) == 2**63 + 5
    # null items: the pad in their place, left out of the mask (the same keys in every batch)
    m = next(iter(repo.dataset("u").pipeline().batch(2, collate=dl.pad_collate(mask=True))))
    assert m["holes"].tolist() == [[1, 0, 3], [4, 0, 0]]
    assert m["holes_mask"].tolist() == [[True, False, True], [True, False, False]]
    assert m["holes_length"].tolist() == [3, 1]
    empty = dl.pad_collate(mask=True)([{"t": []}, {"t": []}], schema=pa.schema(
        [("t", pa.list_(pa.int32()))]))  # a stored column's batch of empty rows: padded too
    assert empty["t"].shape == (2, 0) and empty["t"].dtype == np.int32
    with pytest.raises(ConfigError, match="does not hold"):  # dtype= never wraps silently
        dl.pad_collate(dtype="int16")([{"a": np.array([50000], np.int64)}])
    assert dl.pad_collate(pad_value=0.1)([{"a": np.ones(2, np.float32)}, {"a": np.ones(1,
                                          np.float32)}])["a"].dtype == np.float32
    rows = [{"ids": [1, 2**63 + 5]}, {"ids": [3]}]  # Python ints, no stored type
    assert dl.pad_collate()(rows)["ids"].dtype == np.uint64
    nan = dl.pad_collate(pad_value=float("nan"))([{"x": [0.5, 1.5]}, {"x": [2.5]}])
    assert np.isnan(nan["x"][1, 1]) and nan["x"][1, 0] == 2.5
    with pytest.raises(ConfigError, match="NaN pads floats only"):
        dl.pad_collate(pad_value=float("nan"))([{"x": [1]}])
    given = dl.pad_collate(dtype="float32")([{"f": [[0.5, 1.0]]}, {"f": []}])  # after a map
    assert given["f"].dtype == np.float32 and given["f"].shape == (2, 1, 2)
    per = dl.pad_collate(dtype={"a": "int16"})([{"a": [1], "b": [2]}])
    assert (per["a"].dtype, per["b"].dtype) == (np.int16, np.int64)
    tensors = dl.pad_collate()([{"t": torch.tensor([1, 2], dtype=torch.int32)},
                                {"t": torch.tensor([3], dtype=torch.int32)}])
    assert tensors["t"].dtype == torch.int32 and tensors["t"].tolist() == [[1, 2], [3, 0]]
    with pytest.raises(ConfigError, match=r"not a numpy dtype|number type"):
        dl.pad_collate(dtype="text")


def test_null_frames_dtype_narrowing_and_pads_of_rows_with_holes() -> None:
    import pyarrow as pa

    schema = pa.schema([("f", pa.list_(pa.list_(pa.float32(), 2)))])
    got = dl.pad_collate(mask=True)([{"f": [[1, 2], None, [5, 6]]}, {"f": [[7, None]]}],
                                    schema=schema)
    assert got["f"].shape == (2, 3, 2) and got["f"].dtype == np.float32
    assert got["f"][0].tolist() == [[1, 2], [0, 0], [5, 6]]
    assert got["f_mask"].tolist() == [[True, False, True], [False, False, False]]
    f64 = dl.pad_collate(dtype="float32")([{"a": np.array([0.1, 0.2])}, {"a": np.array([0.3])}])
    assert f64["a"].dtype == np.float32  # float64 narrowed to float32 as asked
    with pytest.raises(ConfigError, match="does not hold"):
        dl.pad_collate(dtype="int32")([{"a": [1.5]}])  # not truncated to 1
    with pytest.raises(ConfigError, match="pad_value=-1"):  # the pad is named, not the rows
        dl.pad_collate(pad_value=-1)([{"t": [1, None]}], schema=pa.schema(
            [("t", pa.list_(pa.uint16()))]))
