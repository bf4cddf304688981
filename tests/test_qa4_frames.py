"""to_pandas() and to_polars() keep tensor shapes (QA4 C2)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dload_arrow import Repository


def _img(i: int) -> np.ndarray:
    return np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * i


@pytest.fixture
def tensors(repo: Repository) -> Repository:
    samples = [(f"k{i}", {"img": None if i == 1 else _img(i), "vec": np.arange(3.0) + i,
                          "cube": np.full((2, 1, 2), i, np.int16), "label": i})
               for i in range(4)]
    repo.commit("t", samples, progress=False)
    return repo


def test_to_pandas_cells_are_arrays_of_the_tensor_shape(tensors: Repository) -> None:
    df = tensors.dataset("t").to_pandas()
    assert list(df.columns) == ["__key__", "img", "vec", "cube", "label"]
    assert df["img"][1] is None
    for i in (0, 2, 3):
        cell = df["img"][i]
        assert isinstance(cell, np.ndarray) and cell.dtype == np.float32
        assert cell.shape == (2, 3)
        assert np.array_equal(cell, _img(i))
        assert df["cube"][i].shape == (2, 1, 2) and df["cube"][i].dtype == np.int16
        assert df["vec"][i].tolist() == [i, i + 1.0, i + 2.0]
    assert df["label"].tolist() == [0, 1, 2, 3]


def test_to_pandas_of_a_view_and_of_selected_columns(tensors: Repository) -> None:
    view = tensors.dataset("t").where("label >= 2")
    df = view.to_pandas(columns=["img"])
    assert list(df.columns) == ["__key__", "img"]
    assert [c.tolist() for c in df["img"]] == [_img(2).tolist(), _img(3).tolist()]
    assert len(tensors.dataset("t").where("label > 9").to_pandas()["img"]) == 0


def test_to_polars_gives_arrays_of_the_tensor_shape(tensors: Repository) -> None:
    frame = tensors.dataset("t").to_polars().collect()
    assert frame.schema["img"] == pl.Array(pl.Float32, shape=(2, 3))
    assert frame.schema["cube"] == pl.Array(pl.Int16, shape=(2, 1, 2))
    assert frame.schema["vec"] == pl.Array(pl.Float64, shape=(3,))
    assert frame["img"].to_list() == [_img(0).tolist(), None, _img(2).tolist(),
                                      _img(3).tolist()]
    assert frame["cube"][3].to_list() == np.full((2, 1, 2), 3).tolist()


@pytest.mark.parametrize("condition, want", [
    ("label != 2", ["k0", "k1", "k3"]),
    ("label > 9", []),  # every row group pruned: no file scanned
    ("label = 2.5", []),
])
def test_to_polars_of_a_view_keeps_the_shape(
        tensors: Repository, condition: str, want: list[str]) -> None:
    lf = tensors.dataset("t").where(condition).to_polars(columns=["img"])
    assert lf.collect_schema()["img"] == pl.Array(pl.Float32, shape=(2, 3))
    frame = lf.collect()
    assert frame["__key__"].to_list() == want
    assert frame["img"].to_list() == [None if k == "k1" else _img(int(k[1])).tolist()
                                      for k in want]
