"""Reading never imports pandas: ``pa.array`` and ``Array.to_numpy`` would, on their first call
in a process (0.3-0.45 s and about 50 MB before the first shuffled batch of every process and
DataLoader worker). See dload_arrow/arrays.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import Repository
from dload_arrow.arrays import (
    binary_array,
    bool_array,
    int64_array,
    numpy_values,
    scalar,
    string_array,
)

READS = """
import sys
import numpy as np
import dload_arrow as dl
from dload_arrow import Repository
repo = Repository.open(sys.argv[1], cache_dir=sys.argv[2])
ds, vecs = repo.dataset("imgs"), repo.dataset("vecs")
paths = {
    "sequential batches": lambda: ds.batches(),
    "sequential samples": lambda: ds.samples(),
    "windowed batches": lambda: ds.shuffle(40, seed=1).iter_chunks(),
    "windowed samples": lambda: ds.shuffle(40, seed=1),
    "full shuffle batches": lambda: ds.shuffle(full=True, seed=1).iter_chunks(),
    "full shuffle samples": lambda: ds.shuffle(full=True, seed=1),
    "mix": lambda: dl.mix([ds.shuffle(40, seed=1), vecs.shuffle(30, seed=2)], [0.7, 0.3]),
    "mixed batches": lambda: dl.mix([ds.shuffle(40, seed=1), ds.shuffle(40, seed=3)],
                                    [0.5, 0.5]).iter_chunks(),
    "batch": lambda: vecs.shuffle(30, seed=1).batch(8),
    "filter": lambda: ds.shuffle(40, seed=1).filter(lambda r: r["label"] % 2 == 0),
    "shard": lambda: ds.shuffle(40, seed=1).shard(1, 2).iter_chunks(),
    "tensor samples": lambda: vecs.shuffle(30, seed=1),
    "random access": lambda: [ds[3], ds.take([5, 1, 7])],
    "where": lambda: ds.where("label IN (1, 3) and ok = true and image IS NOT NULL "
                              "and __key__ >= 'i010' and label < 4.5").shuffle(40, seed=1),
    "where, null literal": lambda: [len(ds.where("label = 1 or label = NULL").to_arrow())],
    "lookup by key": lambda: [ds.get("i007"), ds.take(["i100", "i002"])],
    "lookup by key, key index": lambda: [vecs.get("v007"), vecs.take(["v080", "v002"])],
}
if len(sys.argv) > 3:
    from torch.utils.data import DataLoader
    from dload_arrow.torch import as_iterable_dataset
    paths["torch"] = lambda: DataLoader(as_iterable_dataset(vecs.shuffle(30, seed=1).batch(4)),
                                        batch_size=None, num_workers=0)
for name, make in paths.items():
    n = sum(1 for _ in make())
    assert n > 0, name
    if "pandas" in sys.modules:
        sys.exit(f"reading {name} imported pandas")
print("ok", len(paths))
"""


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str]:
    root, cache = str(tmp_path / "root"), str(tmp_path / "cache")
    repo = Repository.open(root, cache_dir=cache)
    rng = np.random.default_rng(0)
    repo.commit("imgs", [(f"i{i:03d}", {"image": rng.bytes(1500 + i), "label": i % 5,
                                        "ok": i % 3 == 0})
                         for i in range(120)], row_group_size=16, shard_size=60, progress=False)
    repo.commit("vecs", [(f"v{i:03d}", {"v": np.full((2, 3), i, np.float32), "x": i})
                         for i in reversed(range(90))], row_group_size=20, progress=False)
    assert repo.dataset("vecs").manifest.key_index is not None  # unsorted keys: indexed
    return root, cache


@pytest.mark.parametrize("torch", [False, True], ids=["arrow", "torch"])
def test_reading_in_a_fresh_process_never_imports_pandas(stored: tuple[str, str],
                                                         torch: bool) -> None:
    args = [sys.executable, "-c", READS, *stored] + (["torch"] if torch else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("ok")


def test_built_arrays_equal_what_pa_array_builds() -> None:
    offs = np.array([3, 0, 9, 2**40], np.int64)
    assert int64_array(offs).equals(pa.array(offs, pa.int64()))
    assert int64_array([5, 0]).equals(pa.array([5, 0], pa.int64()))
    assert int64_array(np.array([], np.int32)).equals(pa.array([], pa.int64()))
    mask = np.array([True, False, True, True, False, False, True, False, True, True])
    assert bool_array(mask).equals(pa.array(mask))
    values = [b"a" * 20, b"", b"\x00\xff"]
    assert binary_array(values).equals(pa.array(values, pa.binary()))
    keys = ["img/001", "", "\u00e9t\u00e9/\U0001f600"]
    assert string_array(keys).equals(pa.array(keys, pa.string()))
    for value in [None, True, False, 0, -5, 2**62, 1.5, "x", "", b"ab"]:
        want = pa.scalar(None, pa.bool_()) if value is None else pa.scalar(value)
        assert scalar(value).equals(want), value


@pytest.mark.parametrize("t", [pa.int8(), pa.uint16(), pa.int32(), pa.int64(), pa.float16(),
                               pa.float32(), pa.float64(), pa.bool_()])
def test_numpy_values_of_sliced_arrays_equal_to_numpy(t: pa.DataType) -> None:
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 2, 37) if pa.types.is_boolean(t) else rng.integers(0, 100, 37)
    arr = pa.array(raw).cast(t).slice(5, 23)
    got = numpy_values(arr)
    want = arr.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if not pa.types.is_boolean(t):  # numbers are views of the Arrow buffer
        assert np.shares_memory(got, np.frombuffer(arr.buffers()[1], np.uint8))


def test_numpy_values_with_nulls_fall_back_to_arrow() -> None:
    arr = pa.array([1.5, None, 3.0])
    np.testing.assert_array_equal(numpy_values(arr), [1.5, np.nan, 3.0])
