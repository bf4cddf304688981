"""Arrow columns and samples become tensors, without copies where Arrow's layout allows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

from dload_arrow.store.rows import to_batches  # noqa: E402
from dload_arrow.torch import collate, column_to_tensor, sample_to_torch, to_torch  # noqa: E402


def _batch() -> pa.RecordBatch:
    pairs = [
        (f"k{i}", {"img": np.full((2, 3), i, np.float32), "label": i, "ok": i % 2 == 0,
                   "jpeg": bytes([i]) * 3, "text": f"t{i}"})
        for i in range(5)
    ]
    return next(to_batches(pairs))


def test_numeric_and_tensor_columns_share_arrow_memory():
    batch = _batch()
    out = to_torch(batch)
    label = batch.column(batch.schema.get_field_index("label"))
    assert out["label"].tolist() == [0, 1, 2, 3, 4]
    assert out["label"].data_ptr() == label.buffers()[1].address
    img_col = batch.column(batch.schema.get_field_index("img"))
    assert out["img"].shape == (5, 2, 3) and out["img"].dtype == torch.float32
    assert out["img"].data_ptr() == img_col.flatten().buffers()[1].address
    assert torch.equal(out["img"][3], torch.full((2, 3), 3.0))


def test_sliced_batches_keep_their_offset_without_copy():
    whole = _batch()
    out = to_torch(whole.slice(2, 2))
    assert out["label"].tolist() == [2, 3]
    assert out["img"][:, 0, 0].tolist() == [2.0, 3.0]
    base = whole.column(whole.schema.get_field_index("img")).flatten().buffers()[1].address
    assert out["img"].data_ptr() == base + 2 * 6 * 4


def test_bytes_strings_bools_and_nulls():
    out = to_torch(_batch())
    assert out["jpeg"] == [bytes([i]) * 3 for i in range(5)]
    assert out["text"] == [f"t{i}" for i in range(5)] and out["__key__"][0] == "k0"
    assert out["ok"].dtype == torch.bool and out["ok"].tolist() == [True, False] * 2 + [True]
    with_null = pa.array([1, None, 3], pa.int64())
    assert column_to_tensor(with_null) == [1, None, 3]  # a missing value is never a number


def test_fixed_size_list_without_shape_metadata_is_rows_by_size():
    arr = pa.array([[1, 2], [3, 4]], pa.list_(pa.int32(), 2))
    t = column_to_tensor(arr, pa.field("v", arr.type))
    assert t.shape == (2, 2) and t.tolist() == [[1, 2], [3, 4]]
    field = pa.field("v", arr.type, metadata={b"dload.shape": json.dumps([2, 1]).encode()})
    assert column_to_tensor(arr, field).shape == (2, 2, 1)


def test_samples_and_default_collate():
    schema = _batch().schema
    sample = {"img": np.arange(6, dtype=np.float32), "label": 3, "jpeg": b"\xff", "text": "a"}
    out = sample_to_torch(sample, schema)
    assert out["img"].shape == (2, 3) and out["label"].item() == 3
    assert out["jpeg"] == b"\xff" and out["text"] == "a"
    batch = collate([sample_to_torch(dict(sample, label=i), schema) for i in range(4)])
    assert batch["img"].shape == (4, 2, 3) and batch["label"].tolist() == [0, 1, 2, 3]
    assert batch["jpeg"] == [b"\xff"] * 4
    ragged = collate([{"v": torch.zeros(2)}, {"v": torch.zeros(3)}])
    assert isinstance(ragged["v"], list) and len(ragged["v"]) == 2
    assert collate([]) == {}


def test_pipeline_batches_of_numpy_become_tensors():
    item = {"x": np.ones((4, 2), np.float64), "y": [b"a", b"b"], "n": np.arange(4)}
    out = to_torch(item)
    assert out["x"].shape == (4, 2) and out["n"].tolist() == [0, 1, 2, 3]
    assert out["y"] == [b"a", b"b"]
    assert to_torch(7) == 7  # anything else passes through


def test_a_batched_tensor_column_with_nulls_gives_tensors_in_and_out_of_a_loader(
        tmp_path: Path) -> None:
    from dload_arrow import Repository
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset

    repo = Repository.open(tmp_path / "r", cache_dir=tmp_path / "c")
    repo.commit("n", [(f"k{i}", {"t": np.ones((2, 2), np.float32) * i if i % 2 else None})
                      for i in range(6)], progress=False)

    def first() -> Any:
        return as_iterable_dataset(repo.dataset("n").pipeline().batch(3))

    direct = next(iter(first()))["t"]
    loaded = next(iter(StatefulLoader(first(), num_workers=0)))["t"]
    for column in (direct, loaded):
        assert [type(v).__name__ for v in column] == ["NoneType", "Tensor", "NoneType"]
        assert column[1].shape == (2, 2) and column[1].dtype == torch.float32
