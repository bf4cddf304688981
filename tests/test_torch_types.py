"""Values keep their type, or are refused clearly, on the way to torch tensors.

Found by a QA pass: a batch of ints >= 2**63 crashed ``torch.from_numpy`` (numpy's ulonglong),
lists of Python floats became float32 (1e300 -> inf), lists of ints beyond int64 overflowed
with a raw error, ``arrow.fixed_shape_tensor`` columns lost their shape and dtype, and numpy
scalars of narrow types (int8, float16 after ``unbatch``) widened to int64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import as_iterable_dataset, collate, to_torch  # noqa: E402


def _items(pipe: Any) -> list[Any]:
    return list(as_iterable_dataset(pipe))


def test_a_batch_of_python_ints_past_2_63_is_a_uint64_tensor(repo: Repository) -> None:
    big = [2**63 + i for i in range(4)]
    repo.commit("u", [(f"k{i}", {"x": v}) for i, v in enumerate(big)], progress=False,
                schema=pa.schema([("x", pa.uint64())]))
    pipe = repo.dataset("u").pipeline().map(dict).batch(2)  # Python ints, then numpy
    got = [b["x"] for b in _items(pipe)]
    assert all(t.dtype == torch.uint64 for t in got)
    assert [v for t in got for v in t.tolist()] == big  # as an Arrow batch gives them
    arrow = _items(repo.dataset("u").pipeline().batch(2))[0]["x"]
    assert arrow.dtype == torch.uint64 and arrow.tolist() == got[0].tolist()
    pairs = repo.dataset("u").pipeline().map(lambda s: {"x": np.asarray([s["x"], 2**63])})
    first = _items(pairs)[0]["x"]  # numpy's ulonglong array, from a map
    assert first.dtype == torch.uint64 and first.tolist() == [big[0], 2**63]


def test_lists_of_python_floats_stay_float64_without_a_schema(repo: Repository) -> None:
    repo.commit("f", [(f"k{i}", {"x": i}) for i in range(4)], progress=False)
    floats = [1e300, 1e-300, 0.1]
    pipe = repo.dataset("f").pipeline().map(lambda s: {"v": floats, "m": [s["x"], 0.5]})
    sample = _items(pipe)[0]  # a map: no schema, Python values
    assert sample["v"].dtype == torch.float64 and sample["v"].tolist() == floats
    assert sample["m"].dtype == torch.float64 and sample["m"].tolist() == [0.0, 0.5]
    batch = _items(pipe.batch(2, collate=collate))[0]
    assert batch["v"].dtype == torch.float64 and batch["v"][1].tolist() == floats
    unbatched = _items(repo.dataset("f").pipeline().map(lambda s: {"v": [1e300]}).batch(2)
                       .unbatch())[0]
    assert unbatched["v"].dtype == torch.float64 and unbatched["v"].tolist() == [1e300]


@pytest.mark.parametrize(("ints", "match"), [
    ([2**64, 1], r"column 'v': the list of ints \[18446744073709551616, 1\] fits no torch "
                 r"integer dtype \(18446744073709551616 is outside int64 and uint64\)"),
    ([2**63, -1], r"\(9223372036854775808 needs uint64, and -1 is negative\); make it floats"),
])
def test_a_list_of_ints_no_torch_dtype_holds_is_refused_naming_column_and_value(
        repo: Repository, ints: list[int], match: str) -> None:
    from dload_arrow import SchemaError

    repo.commit("f", [(f"k{i}", {"x": i}) for i in range(4)], progress=False)
    pipe = repo.dataset("f").pipeline().map(lambda s: {"v": ints})
    with pytest.raises(SchemaError, match=match):
        _items(pipe)
    assert _items(pipe.batch(2))[0]["v"] == [ints, ints]  # not stacked: a list, as before
    raw = list(as_iterable_dataset(pipe, to_tensors=False))
    assert raw[0]["v"] == ints  # the way out the message gives


def test_a_list_of_ints_from_2_63_up_is_a_uint64_tensor(repo: Repository) -> None:
    repo.commit("f", [(f"k{i}", {"x": i}) for i in range(4)], progress=False)
    got = _items(repo.dataset("f").pipeline().map(lambda s: {"v": [2**63, s["x"]]}))
    assert got[1]["v"].dtype == torch.uint64 and got[1]["v"].tolist() == [2**63, 1]


def _tensor_table(value_type: pa.DataType, permutation: list[int] | None = None) -> pa.Table:
    typ = pa.fixed_shape_tensor(value_type, [2, 3], permutation=permutation)
    flat = [[10 * i + j for j in range(6)] for i in range(5)]
    storage = pa.array(flat, pa.list_(value_type, 6))
    return pa.table({"__key__": [f"k{i}" for i in range(5)],
                     "t": pa.ExtensionArray.from_storage(typ, storage)})


@pytest.mark.parametrize("value_type", [pa.float64(), pa.int16(), pa.float16()])
@pytest.mark.parametrize("permutation", [None, [1, 0]])
def test_fixed_shape_tensor_columns_keep_shape_and_value_type(
        repo: Repository, value_type: pa.DataType, permutation: list[int] | None) -> None:
    table = _tensor_table(value_type, permutation)
    repo.commit("t", table, progress=False)
    want = torch.from_numpy(np.array(table.column("t").combine_chunks().to_numpy_ndarray()))
    assert want.shape == ((5, 2, 3) if permutation is None else (5, 3, 2))
    pipe = repo.dataset("t").pipeline()
    arrow = to_torch(repo.dataset("t").to_arrow())  # Arrow columns: column_to_tensor
    stacked = _items(pipe.batch(5))[0]  # numpy blocks
    samples = _items(pipe)
    for got in (arrow["t"], stacked["t"], torch.stack([s["t"] for s in samples])):
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert samples[3]["t"].shape == want.shape[1:]
    assert isinstance(repo.dataset("t").get("k1")["t"], np.ndarray)  # as a tensor column
    sliced = to_torch(repo.dataset("t").to_arrow().slice(2, 2))["t"]  # an offset into buffers
    assert torch.equal(sliced, want[2:4])


def test_a_missing_fixed_shape_tensor_stays_none(repo: Repository) -> None:
    typ = pa.fixed_shape_tensor(pa.float32(), [2])
    storage = pa.array([[1.0, 2.0], None], pa.list_(pa.float32(), 2))
    table = pa.table({"__key__": ["a", "b"], "t": pa.ExtensionArray.from_storage(typ, storage)})
    repo.commit("t", table, progress=False)
    a, b = _items(repo.dataset("t").pipeline())
    assert a["t"].dtype == torch.float32 and a["t"].tolist() == [1.0, 2.0] and b["t"] is None
    assert to_torch(repo.dataset("t").to_arrow())["t"] == [[1.0, 2.0], None]


_NARROW = pa.schema([("i8", pa.int8()), ("i16", pa.int16()), ("u8", pa.uint8()),
                     ("f16", pa.float16()), ("f32", pa.float32()), ("b", pa.bool_())])
_NARROW_TORCH = {"i8": torch.int8, "i16": torch.int16, "u8": torch.uint8,
                 "f16": torch.float16, "f32": torch.float32, "b": torch.bool}


@pytest.mark.parametrize("how", ["batch", "sample", "unbatch", "unbatch-batch"])
def test_narrow_columns_keep_their_dtype_through_batch_and_unbatch(
        repo: Repository, how: str) -> None:
    rows = [(f"k{i}", {"i8": -i, "i16": 300 * i, "u8": 200 + i, "f16": np.float16(i / 4),
                       "f32": i / 8, "b": i % 2 == 0}) for i in range(6)]
    repo.commit("n", rows, schema=_NARROW, progress=False)
    pipe = repo.dataset("n").pipeline()
    pipe = {"batch": pipe.batch(3), "sample": pipe, "unbatch": pipe.batch(4).unbatch(),
            "unbatch-batch": pipe.batch(4).unbatch().batch(3)}[how]
    items = _items(pipe)
    got = {c: [t.dtype for t in (x[c] for x in items)] for c in _NARROW_TORCH}
    assert got == {c: [d] * len(items) for c, d in _NARROW_TORCH.items()}
    first = items[0]["i8"]
    assert (first.tolist() if first.dim() else [first.item()])[0] == 0
    if how == "unbatch":
        assert [int(x["u8"]) for x in items] == [200 + i for i in range(6)]


def test_numpy_scalars_keep_their_dtype_after_a_map(repo: Repository) -> None:
    repo.commit("n", [(f"k{i}", {"x": i}) for i in range(4)], progress=False)
    pipe = repo.dataset("n").pipeline().map(
        lambda s: {"a": np.int8(s["x"]), "b": np.uint16(s["x"]), "c": np.bool_(True)})
    item = _items(pipe)[1]
    assert (item["a"].dtype, item["b"].dtype, item["c"].dtype) == (
        torch.int8, torch.uint16, torch.bool)
    assert item["a"].item() == 1
