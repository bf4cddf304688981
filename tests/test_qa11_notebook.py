"""QA round "notebook2": frames and column lists as a notebook user passes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import Repository


def _tensor_repo(tmp_path: Path, dtype: type, second: np.ndarray | None) -> Repository:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    schema = pa.schema([pa.field("x", pa.list_(pa.from_numpy_dtype(dtype), 6), True,
                                 {"dload.shape": "[2, 3]"})])
    first = np.arange(6, dtype=dtype).reshape(2, 3)
    repo.commit("t", [("a", {"x": first}), ("b", {"x": second})], schema=schema,
                progress=False)
    return repo


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float32])
def test_to_pandas_keeps_the_tensor_shape_beside_a_null_sample(tmp_path: Path,
                                                               dtype: type) -> None:
    repo = _tensor_repo(tmp_path, dtype, None)
    cells = repo.dataset("t").to_pandas()["x"].tolist()
    assert cells[1] is None
    assert cells[0].shape == (2, 3) and cells[0].dtype == np.dtype(dtype)
    assert cells[0].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_columns_may_be_any_iterable_once(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", pa.table({"x": [1, 2], "y": [3, 4], "img": [b"a", b"b"]}), progress=False)
    ds = repo.dataset("d")

    def gen() -> object:
        return (c for c in ds.schema.names if c != "img")

    want = ["__key__", "x", "y"]
    assert ds.to_arrow(columns=gen()).column_names == want  # type: ignore[arg-type]
    assert list(ds.to_pandas(columns=gen()).columns) == want  # type: ignore[arg-type]
    assert ds.head(1, columns=gen()).column_names == want  # type: ignore[arg-type]
    view = ds.where("x > 1")
    assert view.to_arrow(columns=gen()).to_pylist() == [  # type: ignore[arg-type]
        {"__key__": ds.to_arrow()["__key__"][1].as_py(), "x": 2, "y": 4}]
