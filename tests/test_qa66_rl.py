"""QA rl66, an RL researcher's episodes: a list of frames counted 8 bytes a frame when row
groups and shards were cut, so every episode of a commit went into one row group of one shard
whatever shard_size and row_group_size said, and a read of one episode decoded them all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dload_arrow as dl
from dload_arrow.store.row_sizes import row_sizes

F = 16 * 16 * 3


def _episode(rng: np.random.Generator, layout: str) -> object:
    x = rng.integers(0, 256, (40, 16, 16, 3), dtype=np.uint8)
    if layout == "frames":
        return x.reshape(40, F)
    if layout == "pngs":
        return [f.tobytes() for f in x]
    if layout == "struct":
        return {"obs": [f.tobytes() for f in x], "reward": 1.0}
    return x.tolist()


@pytest.mark.parametrize(("layout", "typ"), [
    ("frames", pa.list_(pa.list_(pa.uint8(), F))),
    ("pngs", pa.list_(pa.binary())),
    ("nested", pa.list_(pa.list_(pa.list_(pa.list_(pa.uint8()))))),
    ("struct", pa.struct([("obs", pa.large_list(pa.binary())), ("reward", pa.float32())])),
])
def test_episodes_are_cut_into_row_groups_and_shards_by_their_bytes(
        tmp_path: Path, layout: str, typ: pa.DataType) -> None:
    rng = np.random.default_rng(0)
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    episodes = [(f"ep{e:02d}", {"obs": _episode(rng, layout)}) for e in range(12)]
    v = repo.commit("eps", episodes, schema=pa.schema([("obs", typ)]),
                    shard_size="100KB", row_group_size="40KB")
    assert v.num_shards >= 3  # 12 episodes of 30 KB of frames, in shards of 100 KB
    for f in (tmp_path / "r" / "shards").rglob("*.parquet"):
        meta = pq.ParquetFile(f).metadata
        assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= 2
    ds = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c2")).dataset("eps")
    assert [s["obs"] for s in ds.samples()] == [pa.array(
        [o.tolist() if isinstance(o := r["obs"], np.ndarray) else o], typ).to_pylist()[0]
        for _, r in episodes]


def test_row_sizes_count_what_nested_items_hold() -> None:
    frames = pa.array([[[1] * 100] * 3, [[1] * 100]], pa.list_(pa.list_(pa.uint8(), 100)))
    blobs = pa.array([[b"x" * 1000, b"y" * 10], [b"z" * 5000]], pa.list_(pa.binary()))
    rows = pa.record_batch([frames, blobs], names=["f", "b"])
    sizes = row_sizes(rows)
    assert sizes[0] >= 300 + 1010 and sizes[1] >= 100 + 5000
    assert sizes[0] < 2 * (300 + 1010) and sizes[1] < 2 * (100 + 5000)
    sliced = row_sizes(rows.slice(1))
    assert sliced.tolist() == sizes[1:].tolist()
    s = pa.array([{"a": [b"q" * 70]}, {"a": [b"q" * 7000]}]).slice(1)
    assert 7000 <= row_sizes(pa.record_batch([s], names=["s"]))[0] < 7100


def test_an_episodes_frames_are_one_tensor_of_their_stored_type(tmp_path: Path) -> None:
    """QA rl66 F3: a list<fixed_size_list<uint8>> cell came to a DataLoader's collate_fn as
    nested lists, and pad_collate made it int64 (float32 actions float64)."""
    import torch

    from dload_arrow.torch import as_iterable_dataset, sample_to_torch

    schema = pa.schema([("obs", pa.list_(pa.list_(pa.uint8(), 4))),
                        ("act", pa.list_(pa.list_(pa.float32(), 2)))])
    rng = np.random.default_rng(0)
    rows = [(f"ep{e}", {"obs": rng.integers(0, 256, (t, 4), dtype=np.uint8),
                        "act": rng.normal(size=(t, 2)).astype(np.float32)})
            for e, t in enumerate([3, 5, 0, 2])]
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("eps", rows, schema=schema)
    ds = repo.dataset("eps")
    got = sample_to_torch(ds[2], ds.schema)
    assert got["obs"].dtype == torch.uint8 and tuple(got["obs"].shape) == (0, 4)
    assert sample_to_torch({"obs": [[1, 2, 3, 4], None]}, ds.schema)["obs"] == [
        [1, 2, 3, 4], None]
    loader = torch.utils.data.DataLoader(as_iterable_dataset(ds.pipeline()), batch_size=4,
                                         collate_fn=dl.pad_collate())
    batch = next(iter(loader))
    assert batch["obs"].dtype == torch.uint8 and batch["act"].dtype == torch.float32
    assert tuple(batch["obs"].shape) == (4, 5, 4)
    assert np.array_equal(batch["obs"][1].numpy(), rows[1][1]["obs"])
    same = next(iter(ds.pipeline().batch(4, collate=dl.pad_collate())))
    for c in ("obs", "act"):
        assert np.array_equal(np.asarray(same[c]), batch[c].numpy())
        assert np.asarray(same[c]).dtype == batch[c].numpy().dtype


def test_frames_from_numpy_are_built_from_their_buffers_exactly() -> None:
    """QA rl66 F2: an episode's (T, F) array went through .tolist(), a Python int a byte."""
    from dload_arrow.store.frames import frames_array

    rng = np.random.default_rng(1)
    t = pa.large_list(pa.list_(pa.list_(pa.uint8(), 3), 2))
    values = [rng.integers(0, 256, (n, 2, 3), dtype=np.uint8) for n in (2, 0, 3)]
    values.insert(1, None)
    got = frames_array(values, t)
    assert got is not None and got.type == t
    want = pa.array([None if v is None else v.tolist() for v in values], t)
    assert got.equals(want)
    sliced = [values[0][::-1], values[2][:, :, :]]  # (views, not contiguous)
    assert frames_array(sliced, t).to_pylist() == [v.tolist() for v in sliced]
    assert frames_array([values[0].astype(np.int16)], t) is None  # another dtype: checked
    assert frames_array([values[0][:, :1]], t) is None  # another frame shape
    assert frames_array([[[[1, 2, 3], [4, 5, 6]]]], t) is None  # lists: as before


def test_dictionary_rows_are_sized_by_their_values() -> None:
    """QA review66b F8: a dictionary column counted 4 bytes a row, so 40 values of 100 KB went
    into one row group of one shard."""
    arr = pa.array(["x" * 1000, "y" * 10, None, "x" * 1000]).dictionary_encode().slice(1)
    sizes = row_sizes(pa.record_batch([arr], names=["d"]))
    assert sizes[0] < 100 and sizes[1] < 100 and 1000 <= sizes[2] < 1100


def test_frames_of_another_shape_and_a_bool_pad_value(tmp_path: Path) -> None:
    """QA rl66 F4: frames of 60 values into a column of 48-value frames were told "store a
    wider type"; pad_value={"dones": True} for a bool column is refused, saying to give 1."""
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    schema = pa.schema([("obs", pa.list_(pa.list_(pa.uint8(), 48)))])
    repo.commit("eps", [("ep0", {"obs": np.zeros((5, 48), np.uint8)})], schema=schema)
    with pytest.raises(dl.SchemaError, match=r"holds frames of shape \(60,\), but the "
                       r"column's frames have shape \(48,\)"):
        repo.append("eps", [("ep1", {"obs": np.zeros((5, 60), np.uint8)})])
    with pytest.raises(dl.ConfigError, match="a bool column pads with 1 for True"):
        dl.pad_collate(pad_value={"dones": True})  # (an int column would pad with it too)
    pad = dl.pad_collate(pad_value={"dones": 1})
    batch = pad([{"dones": np.array([True, False])}, {"dones": np.array([False])}])
    assert batch["dones"].tolist() == [[True, False], [False, True]]


def test_the_same_rows_in_other_batches_give_the_same_version(tmp_path: Path) -> None:
    """QA lowmem66: a commit's samples are chunked by bytes now, not only by count; a row
    group spanning two input batches was written to other bytes (Parquet pages large values
    at chunk edges), so the same rows in other batches got another version id."""
    import os

    rows = [(f"k{i:03d}", {"blob": os.urandom(1_000_000), "label": i % 3}) for i in range(12)]
    t = pa.table({"__key__": [k for k, _ in rows], "blob": [r["blob"] for _, r in rows],
                  "label": [r["label"] for _, r in rows]})
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    one = repo.commit("a", t, row_group_size="3MB")
    for size in (1, 2, 5):
        split = pa.Table.from_batches(t.to_batches(max_chunksize=size))
        assert repo.commit("a", split, row_group_size="3MB").version == one.version
    assert repo.commit("a", rows, row_group_size="3MB").version == one.version
