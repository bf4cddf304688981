"""UnitRows takes rows from several decoded units as Arrow's take of their concatenation would,
copying each large value once (never concatenating the units' large columns)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dload_arrow.pipeline.unit_rows import LARGE_VALUE_BYTES, UnitRows
from dload_arrow.pipeline.views import views_work

# Types whose large values are copied straight from their units.
COPIED = [pa.binary(), pa.string(), pa.large_binary(), pa.large_string(), pa.binary(1500),
          pa.list_(pa.int32()), pa.large_list(pa.float64()), pa.list_(pa.int16(), 700)]


def column(t: pa.DataType, n: int, rng: np.random.Generator, nulls: bool) -> pa.Array:
    """``n`` values of type ``t``, 1.4-3 KB each (one in four null when ``nulls``)."""
    def value(i: int) -> object:
        if nulls and i % 4 == 1:
            return None
        size = int(rng.integers(2 * LARGE_VALUE_BYTES, 3 * LARGE_VALUE_BYTES))  # nulls: 3/4
        if pa.types.is_fixed_size_binary(t):
            return rng.bytes(t.byte_width)
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return rng.bytes(size)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return "é" * (size // 2)
        if pa.types.is_fixed_size_list(t):
            return rng.integers(-100, 100, t.list_size).tolist()
        return rng.integers(0, 1000, size // (t.value_type.bit_width // 8)).tolist()

    return pa.array([value(i) for i in range(n)], t)


def units(t: pa.DataType, sizes: list[int], seed: int, nulls: bool) -> list[pa.RecordBatch]:
    """Batches of a large column ``t`` and small ones, each sliced (offsets not zero)."""
    rng = np.random.default_rng(seed)
    out = []
    for j, n in enumerate(sizes):
        batch = pa.record_batch({
            "__key__": pa.array([f"{j}-{i}" for i in range(n + 3)]),
            "big": column(t, n + 3, rng, nulls),
            "label": pa.array(rng.integers(0, 9, n + 3)),
        })
        out.append(batch.slice(2, n))
    return out


@settings(max_examples=100, deadline=None)
@given(which=st.integers(0, len(COPIED) - 1),
       sizes=st.lists(st.integers(0, 12), min_size=1, max_size=6),
       nulls=st.booleans(), once=st.booleans(), seed=st.integers(0, 2**16), data=st.data())
def test_take_matches_arrow_take_of_the_concatenation(which: int, sizes: list[int],
                                                       nulls: bool, once: bool, seed: int,
                                                       data: st.DataObject) -> None:
    batches = units(COPIED[which], sizes, seed, nulls)
    rows = UnitRows(batches, once=once)
    whole = pa.Table.from_batches(batches).combine_chunks()
    assert rows.num_rows == whole.num_rows == sum(sizes)
    # a null fixed-size list has null elements: such a column is concatenated instead
    if rows.num_rows and not (nulls and pa.types.is_fixed_size_list(COPIED[which])):
        assert rows.copied_columns == ["big"]
    offs = data.draw(st.lists(st.integers(0, max(rows.num_rows - 1, 0)),
                              max_size=3 * rows.num_rows if rows.num_rows else 0))
    got = rows.take(np.asarray(offs, np.int64))
    got.validate(full=True)
    assert got.schema == whole.schema
    assert pa.Table.from_batches([got]).equals(whole.take(pa.array(offs, pa.int64())))


def test_large_columns_are_not_concatenated() -> None:
    batches = units(pa.binary(), [200] * 8, seed=3, nulls=False)
    big = sum(b.column("big").nbytes for b in batches)
    before = pa.total_allocated_bytes()
    rows = UnitRows(batches).prepare()
    assert pa.total_allocated_bytes() - before < big / 10  # views and small columns only
    got = rows.take(np.random.default_rng(1).permutation(rows.num_rows))
    assert got.column("big").nbytes >= big  # the take is the one copy


def test_consecutive_rows_of_one_unit_are_a_zero_copy_slice() -> None:
    batches = units(pa.large_binary(), [5, 7], seed=4, nulls=True)
    before = pa.total_allocated_bytes()
    rows = UnitRows(batches)
    got = rows.take(np.arange(6, 11))
    # nothing allocated: no views or concatenations are built for a slice (a sequential window)
    assert pa.total_allocated_bytes() == before
    want = batches[1].slice(1, 5)
    assert got.equals(want)
    assert got.column("big").buffers()[2].address == want.column("big").buffers()[2].address
    assert rows.take(np.array([7, 0])).equals(pa.Table.from_batches(batches).take(
        pa.array([7, 0])).to_batches()[0])  # a real take builds them then


@pytest.mark.parametrize("t", [pa.list_(pa.string()), pa.dictionary(pa.int8(), pa.string()),
                               pa.struct([("a", pa.binary())]), pa.list_(pa.bool_())])
def test_other_types_are_concatenated_and_taken_by_arrow(t: pa.DataType) -> None:
    rng = np.random.default_rng(5)
    def value(i: int) -> object:
        s = "x" * int(rng.integers(1000, 3000))
        if pa.types.is_list(t):
            return [s] if pa.types.is_string(t.value_type) else [True] * len(s)
        return {"a": s.encode()} if pa.types.is_struct(t) else s
    batches = [pa.record_batch({"big": pa.array([value(i) for i in range(n)], t)})
               for n in (4, 6)]
    rows = UnitRows(batches, once=True)
    assert rows.copied_columns == []
    offs = rng.permutation(10)
    assert pa.Table.from_batches([rows.take(offs)]).equals(
        pa.Table.from_batches(batches).take(pa.array(offs)))


def test_binary_views_are_used_from_pyarrow_19() -> None:
    # pyarrow 16-18 lack a step of the one-copy path (UnitRows concatenates there, correctly)
    major = int(pa.__version__.split(".")[0])
    assert views_work() == (major >= 19)


def test_needs_a_batch() -> None:
    with pytest.raises(ValueError, match="at least one batch"):
        UnitRows([])


def test_mixed_batches_interleave_with_one_copy() -> None:
    from dload_arrow.pipeline.routes import interleave

    a, b = units(pa.binary(), [3, 2], seed=6, nulls=False)
    got = interleave([a, None, b], np.array([2, 0, 0, 2, 0]))
    assert isinstance(got, pa.RecordBatch)
    want = pa.Table.from_batches([b.slice(0, 1), a.slice(0, 2), b.slice(1, 1), a.slice(2, 1)])
    assert pa.Table.from_batches([got]).equals(want.combine_chunks())


def test_taken_tensor_rows_become_tensors_without_another_copy() -> None:
    torch = pytest.importorskip("torch")
    from dload_arrow.store.rows import to_batches
    from dload_arrow.torch import to_torch

    rng = np.random.default_rng(8)
    images = rng.random((30, 20, 20), dtype=np.float32)  # 1,600 bytes a row
    whole = next(to_batches([(f"k{i}", {"img": images[i]}) for i in range(30)]))
    rows = UnitRows([whole.slice(0, 12), whole.slice(12, 18)])
    assert rows.copied_columns == ["img"]
    order = rng.permutation(30)
    got = rows.take(order)
    out = to_torch(got)
    assert out["img"].shape == (30, 20, 20)
    assert torch.equal(out["img"], torch.from_numpy(images[order]))
    column = got.column(got.schema.get_field_index("img"))
    assert out["img"].data_ptr() == column.flatten().buffers()[1].address


@settings(max_examples=60, deadline=None)
@given(which=st.integers(0, len(COPIED) - 1),
       sizes=st.lists(st.integers(0, 10), min_size=2, max_size=7),
       cut=st.integers(1, 6), nulls=st.booleans(), seed=st.integers(0, 2**16),
       data=st.data())
def test_extended_rows_take_as_if_built_at_once(which: int, sizes: list[int], cut: int,
                                                nulls: bool, seed: int,
                                                data: st.DataObject) -> None:
    """A full shuffle's window grows: ``extended`` reuses the columns built for the first
    units and must take exactly what a UnitRows over all of them takes."""
    batches = units(COPIED[which], sizes, seed, nulls)
    cut = min(cut, len(batches) - 1)
    grown = UnitRows(batches[:cut]).prepare().extended(batches[cut:]).prepare()
    whole = UnitRows(batches)
    assert grown.num_rows == whole.num_rows
    if not whole.num_rows:
        return
    offs = np.asarray(data.draw(st.lists(st.integers(0, whole.num_rows - 1), max_size=40)),
                      np.int64)
    got = grown.take(offs)
    got.validate(full=True)
    assert got.equals(whole.take(offs))
