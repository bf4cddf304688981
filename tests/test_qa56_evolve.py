"""Inputs of a combinator whose schemas differ (QA evolve56).

- two tensor columns of one Arrow type and different shapes ((2, 3) and (3, 2): the shape is
  field metadata, which ``Schema.equals`` does not compare) were read with the first input's
  shape by ``concat``/``mix`` and stacked by ``batch()``: the other input's values reshaped;
- ``int64`` in one input and ``int32`` in the other gave ``int64`` batches, then ``int32`` ones
  mid-epoch (``cross_entropy`` refuses them); now the inputs share the wider type;
- an int past 2**53 among floats (``int64`` in one input, ``float64`` in the other) was rounded
  by the torch adapter in a float64 tensor; it is refused, naming the column and the value.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import SchemaError
from dload_arrow.pipeline.common_schema import common_schema


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")


def test_tensors_of_another_shape_keep_their_shape(repo: dl.Repository) -> None:
    hwc = np.arange(6, dtype=np.uint8).reshape(2, 3)
    chw = np.arange(6, dtype=np.uint8).reshape(3, 2)
    repo.commit("hwc", [("h0", {"img": hwc})], progress=False)
    repo.commit("chw", [("c0", {"img": chw})], progress=False)
    inputs = [repo.dataset("hwc"), repo.dataset("chw")]
    pipe = dl.concat(inputs)
    assert pipe.schema is None
    shapes = {s["__key__"]: s["img"].shape for s in pipe}
    assert shapes == {"h0": (2, 3), "c0": (3, 2)}
    (b,) = list(pipe.batch(2))
    assert [a.shape for a in b["img"]] == [(2, 3), (3, 2)]  # not stacked as one shape
    for seed in range(4):
        got = {s["__key__"]: s["img"] for s in dl.mix(inputs, seed=seed, stop="all")}
        assert np.array_equal(got["c0"], chw) and np.array_equal(got["h0"], hwc)


def test_narrower_numbers_take_the_wider_type(repo: dl.Repository) -> None:
    n = 300
    repo.commit("a", pa.table({"k": [f"a{i:04d}" for i in range(n)],
                               "label": pa.array(range(n), pa.int64()),
                               "f": pa.array([0.5] * n, pa.float64())}), key="k", progress=False)
    repo.commit("b", pa.table({"k": [f"b{i:04d}" for i in range(n)],
                               "label": pa.array(range(n), pa.int32()),
                               "f": pa.array([0.25] * n, pa.float32())}), key="k", progress=False)
    inputs = [repo.dataset("a"), repo.dataset("b")]
    pipe = dl.concat(inputs)
    assert pipe.schema is not None
    assert pipe.schema.field("label").type == pa.int64()
    assert pipe.schema.field("f").type == pa.float64()
    for made in (pipe.batch(16), dl.mix(inputs, seed=1, stop="all").batch(16),
                 dl.concat(inputs).shuffle(64, seed=2).batch(16)):
        types = set()
        values = []
        for batch in made:
            types.add((batch["label"].dtype, batch["f"].dtype))
            values.extend(batch["label"].tolist())
        assert types == {(np.dtype("int64"), np.dtype("float64"))}
        assert sorted(values) == sorted(list(range(n)) * 2)


def test_views_and_widening_together(repo: dl.Repository) -> None:
    repo.commit("a", pa.table({"k": ["a"], "x": pa.array([1], pa.int64())}), key="k",
                progress=False)
    repo.commit("b", pa.table({"k": ["b"], "x": pa.array([2], pa.int16())}), key="k",
                progress=False)
    pipe = dl.concat([repo.dataset("a").pipeline(views=True), repo.dataset("b")])
    assert pipe.schema is not None
    assert pipe.schema.field("x").type == pa.int64()
    assert pipe.schema.field("__key__").type == pa.string_view()
    (b,) = list(pipe.batch(2))
    assert b["x"].dtype == np.int64 and b["x"].tolist() == [1, 2]


@pytest.mark.parametrize(("types", "common"), [
    ([pa.int8(), pa.int64()], pa.int64()),
    ([pa.uint8(), pa.int16()], pa.int16()),
    ([pa.int8(), pa.uint8()], pa.int16()),  # a type neither is, holding both (QA mix56)
    ([pa.int8(), pa.uint8(), pa.int16()], pa.int16()),  # whatever the order
    ([pa.uint32(), pa.uint64()], pa.uint64()),
    ([pa.float16(), pa.float32()], pa.float32()),
    ([pa.int32(), pa.float64()], pa.float64()),
    ([pa.int32(), pa.float32()], pa.float64()),  # 2**31 - 1 has no float32
    ([pa.int16(), pa.float32()], pa.float32()),
    ([pa.string(), pa.large_string()], pa.large_string()),
    ([pa.binary(), pa.large_binary()], pa.large_binary()),
    ([pa.list_(pa.int32()), pa.list_(pa.int64())], pa.list_(pa.int64())),
    ([pa.list_(pa.float32(), 6), pa.list_(pa.float64(), 6)], pa.list_(pa.float64(), 6)),
    ([pa.list_(pa.float32(), 6), pa.list_(pa.float32(), 4)], None),
    ([pa.uint64(), pa.int64()], None),  # no one type holds both
    ([pa.int64(), pa.float64()], None),  # 2**60 + 1 in a double is rounded
    ([pa.int32(), pa.string()], None),
    ([pa.bool_(), pa.int8()], None),
])
def test_common_types(types: list[pa.DataType], common: pa.DataType | None) -> None:
    class P:
        def __init__(self, t: pa.DataType) -> None:
            self.schema = pa.schema([("__key__", pa.string()), ("x", t)])

    for order in (types, types[::-1]):
        got = common_schema([P(t) for t in order])
        assert (None if got is None else got.field("x").type) == common


def test_tensor_features_and_reordered_columns_widen(repo: dl.Repository) -> None:
    f32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    repo.commit("a", [(f"a{i}", {"img": f32, "label": np.int32(i), "t": "x"}) for i in range(4)],
                progress=False)
    repo.commit("b", pa.table({"__key__": [f"b{i}" for i in range(4)],
                               "t": pa.array(["y"] * 4, pa.large_string()),
                               "label": pa.array(range(4), pa.int64())}).append_column(
        pa.field("img", pa.list_(pa.float64(), 6), metadata=repo.dataset("a").schema.field(
            "img").metadata),  # (2, 3) as in "a", float64
        repo.dataset("a").to_arrow().column("img").cast(pa.list_(pa.float64(), 6))),
        progress=False)
    pipe = dl.concat([repo.dataset("a"), repo.dataset("b")])
    assert pipe.schema is not None and pipe.schema.names == ["__key__", "img", "label", "t"]
    kinds = {(b["img"].dtype, b["img"].shape[1:], b["label"].dtype) for b in pipe.batch(2)}
    assert kinds == {(np.dtype("float64"), (2, 3), np.dtype("int64"))}



def test_an_int_past_2_53_among_floats_is_not_rounded_by_torch(repo: dl.Repository) -> None:
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset, collate

    repo.commit("ints", pa.table({"k": ["i0"], "x": pa.array([2**60 + 1], pa.int64())}),
                key="k", progress=False)
    repo.commit("floats", pa.table({"k": ["f0"], "x": [0.5]}), key="k", progress=False)
    pipe = dl.concat([repo.dataset("ints"), repo.dataset("floats")]).batch(2)
    (kept,) = list(pipe)
    assert kept["x"] == [2**60 + 1, 0.5]  # batch() keeps it exact
    with pytest.raises(SchemaError, match=r"column 'x': the int 1152921504606846977 among "
                                          r"floats would be rounded"):
        list(StatefulLoader(as_iterable_dataset(pipe), num_workers=0))
    with pytest.raises(SchemaError, match="would be rounded"):
        collate([{"x": 2**60 + 1}, {"x": 0.5}])
    assert collate([{"x": 2**53}, {"x": 0.5}])["x"].tolist() == [2.0**53, 0.5]  # exact: kept
    (b,) = list(StatefulLoader(as_iterable_dataset(pipe, to_tensors=False), num_workers=0))
    assert b["x"] == [2**60 + 1, 0.5]


def test_a_batch_of_a_mix_of_inputs_with_other_columns_is_refused_before_the_first(
        repo: dl.Repository) -> None:
    n = 300
    repo.commit("a", pa.table({"k": [f"a{i:04d}" for i in range(n)], "x": range(n),
                               "y": [0.5] * n}), key="k", progress=False)
    repo.commit("b", pa.table({"k": [f"b{i:04d}" for i in range(n)], "x": range(n),
                               "z": ["t"] * n}), key="k", progress=False)
    inputs = [repo.dataset("a"), repo.dataset("b")]
    for pipe in (dl.mix(inputs, weights=[0.99, 0.01], seed=1).batch(64),
                 dl.mix(inputs, weights=[0.5, 0.5], seed=1).shuffle(32, seed=1).batch(8)):
        with pytest.raises(SchemaError, match=r"batch: input 1 of .* has columns \['__key__', "
                                              r"'x', 'z'\] and input 0 \['__key__', 'x', 'y'\]"):
            next(iter(pipe))  # when iteration starts, not at the first batch meeting both
    # (QA review56) where a batch can keep to one input, it is not refused:
    assert sum(len(b["x"]) for b in dl.concat(inputs).batch(60)) == 2 * n  # 300 = 5 x 60
    tasks = dl.from_iterable([0] * 10 + [1] * 10)  # a whole batch of each task in turn
    got = list(dl.select(tasks, inputs).batch(10))
    assert [sorted(b)[1:] for b in got] == [["x", "y"], ["x", "z"]]
    one = dl.mix(inputs, weights=[1.0, 0.0], seed=1, stop="first").batch(50)  # b never drawn
    assert all("y" in b for b in one)
    same = dl.concat([repo.dataset("a").pipeline().select(["x"]),
                      repo.dataset("b").pipeline().select(["x"])]).batch(100)
    assert sum(len(b["x"]) for b in same) == 2 * n
    own = dl.mix(inputs, seed=1).batch(64, collate=lambda items: len(items))  # its own collate
    assert sum(own) > 0
