"""Reading and committing never import pandas: ``pa.array``, ``pa.scalar`` and
``Array.to_numpy`` would, on their first call in a process (0.3-0.45 s and about 50 MB before
the first shuffled batch of every process and DataLoader worker, and in every ``dload commit``).
See dload_arrow/arrays.py."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import zoneinfo
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dload_arrow import Repository
from dload_arrow.arrays import (
    _from_buffers,  # the path typed_array prefers
    binary_array,
    bool_array,
    inferred_type,
    int64_array,
    numpy_values,
    pylist,
    scalar,
    string_array,
    typed_array,
)
from dload_arrow.row_values import table_rows

READS = """
import sys
import numpy as np
import dload_arrow as dl
from dload_arrow import Repository
ROOT, CACHE = sys.argv[1:3]
repo = Repository.open(ROOT, cache_dir=CACHE)


def cli(*args):
    from dload_arrow.cli.main import main
    sys.argv = ["dload", *args, "--root", ROOT, "--cache-dir", CACHE]
    try:
        main()
    except SystemExit as e:
        assert not e.code, e.code
    return 1


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
    "catalog SQL": lambda: [repo.sql("SELECT name, num_rows FROM versions"),
                            repo.sql("SELECT count(*) AS n FROM samples('imgs') WHERE label = 1")],
    "lookup by key": lambda: [ds.get("i007"), ds.take(["i100", "i002"])],
    "lookup by key, key index": lambda: [vecs.get("v007"), vecs.take(["v080", "v002"])],
    "time zone-aware values": lambda: [ds.where("when >= '2026-03-29 01:30:00+02:00'")[0],
                                       ds.get("i005")],
    "lineage": lambda: [str(repo.lineage("imgs")), repo.lineage("imgs").to_dict()],
    "dload sql and log": lambda: [cli("sql", "SELECT * FROM versions"), cli("log", "imgs")],
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


WRITES = """
import sys
import numpy as np
from dload_arrow import Repository
from dload_arrow.cli.main import main
root, cache, src = sys.argv[1:4]
repo = Repository.open(root, cache_dir=cache)
rows = [(f"k{i:03d}", {"image": bytes([i % 256]) * 300, "label": i % 7, "name": f"n{i}",
                       "score": i / 3, "ok": i % 2 == 0, "vec": np.full((2, 3), i, np.float32)})
        for i in range(200)]
repo.commit("w", rows, row_group_size=4000, progress=False)
more = [(f"a{i:03d}", dict(r, label=None, name=None)) for i, (_, r) in enumerate(rows[:30])]
repo.append("w", more, progress=False)  # keys now unsorted: a key index is written
assert repo.dataset("w").manifest.key_index is not None
sys.argv = ["dload", "commit", "files", "--from", src, "--root", root, "--cache-dir", cache]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
if "pandas" in sys.modules:
    sys.exit("committing imported pandas")
print("ok", repo.dataset("w").num_rows, repo.dataset("files").num_rows)
"""


def test_committing_in_a_fresh_process_never_imports_pandas(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(12):
        (src / f"f{i:02d}.bin").write_bytes(bytes([i]) * (100 + i))
        (src / f"f{i:02d}.txt").write_text(f"caption {i}")
    args = [sys.executable, "-c", WRITES, str(tmp_path / "root"), str(tmp_path / "cache"),
            str(src)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["ok", "230", "12"]


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str]:
    root, cache = str(tmp_path / "root"), str(tmp_path / "cache")
    repo = Repository.open(root, cache_dir=cache)
    rng = np.random.default_rng(0)
    paris = zoneinfo.ZoneInfo("Europe/Paris")  # times across a daylight-saving change
    start = dt.datetime(2026, 3, 28, 23, 0, tzinfo=dt.UTC)
    repo.commit("imgs", [(f"i{i:03d}", {"image": rng.bytes(1500 + i), "label": i % 5,
                                        "ok": i % 3 == 0,
                                        "when": (start + dt.timedelta(minutes=i)).astimezone(
                                            paris)})
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
    assert done.stdout.splitlines()[-1].startswith("ok")


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


_PY_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                       st.floats(allow_nan=False), st.text(max_size=5), st.binary(max_size=5))
_TYPES = [pa.int64(), pa.int32(), pa.uint8(), pa.float64(), pa.float32(), pa.bool_(),
          pa.string(), pa.binary(), pa.list_(pa.int64()), pa.list_(pa.string()),
          pa.timestamp("us"), pa.duration("s")]


def _arrow_or_error(make: Any) -> Any:
    try:
        return make()
    except Exception as e:  # the same failure as pa.array is what matters
        return type(e)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(_PY_VALUES, st.lists(_PY_VALUES, max_size=3)), max_size=6),
       t=st.sampled_from(_TYPES))
def test_typed_arrays_equal_what_pa_array_builds(values: list[Any], t: pa.DataType) -> None:
    # pandas is imported in this process, so typed_array itself would call pa.array: the
    # buffer path is called directly (None: it leaves these values to pa.array)
    want = _arrow_or_error(lambda: pa.array(values, type=t))
    built = _arrow_or_error(lambda: _from_buffers(values, t))
    for got in (built, _arrow_or_error(lambda: typed_array(values, t))):
        if got is None:
            continue
        if isinstance(want, pa.Array):
            assert isinstance(got, pa.Array) and got.type == want.type and got.equals(want)
        else:
            assert got is want


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_PY_VALUES, min_size=1, max_size=6))
@example(values=[2**63, 0.0])  # pa.array's ArrowInvalid, not the first value's OverflowError
def test_inferred_types_equal_what_pa_array_infers(values: list[Any]) -> None:
    want = _arrow_or_error(lambda: pa.array(values).type)
    assert _arrow_or_error(lambda: inferred_type(values)) == want


def test_tensor_columns_from_numpy_equal_pa_array() -> None:
    t = pa.list_(pa.float32(), 6)
    same = [np.full(6, i, np.float32) for i in range(3)]
    other = [np.full(6, i, np.float64) for i in range(3)]  # another dtype: pa.array casts
    assert _from_buffers(same, t).equals(pa.array(same, t))
    assert _from_buffers(other, t) is None and typed_array(other, t).equals(pa.array(other, t))


def test_a_float_beyond_float32_becomes_inf_without_a_warning() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _from_buffers([1e300, None, -1e300], pa.float32())
    assert got is not None and got.equals(pa.array([1e300, None, -1e300], pa.float32()))


BUDGET = """
import sys
from dload_arrow.arrays import BUFFER_VALUES, typed_array
import pyarrow as pa
small = typed_array(list(range(1000)), pa.int64())
assert "pandas" not in sys.modules, "a small column went through pa.array"
big = list(range(BUFFER_VALUES))
typed_array(big, pa.int64())  # spends the budget
last = typed_array(list(range(10)), pa.int64())
assert last.equals(small.slice(0, 10))
print("pandas" in sys.modules)
"""


def test_typed_arrays_leave_large_volumes_to_pa_array() -> None:
    # building from buffers is slower per value: after BUFFER_VALUES values in a process,
    # pa.array (which imports pandas, once) builds the columns
    pytest.importorskip("pandas")
    done = subprocess.run([sys.executable, "-c", BUDGET], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_numpy_values_with_nulls_fall_back_to_arrow() -> None:
    arr = pa.array([1.5, None, 3.0])
    np.testing.assert_array_equal(numpy_values(arr), [1.5, np.nan, 3.0])


_ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "+02:00", "-03:30"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-50_000_000, 50_000_000)), max_size=30),
       st.sampled_from(_ZONES), st.sampled_from(["s", "ms", "us"]))
def test_zoned_timestamps_convert_as_arrow_converts_them(values: list[int | None], zone: str,
                                                         unit: str) -> None:
    """pylist / table_rows give what to_pylist gives (which imports pandas for these):
    arbitrary instants (daylight-saving changes included), nulls, lists, chunked columns."""
    per_minute = {"s": 1, "ms": 10**3, "us": 10**6}[unit] * 60  # +-95 years in minutes
    t = pa.timestamp(unit, tz=zone)
    arr = pa.array([None if v is None else v * per_minute for v in values], pa.int64()).cast(t)
    assert pylist(arr) == arr.to_pylist()
    assert pylist(arr.slice(1)) == arr.slice(1).to_pylist()
    chunked = pa.chunked_array([arr, arr.slice(2)], t)
    assert pylist(chunked) == chunked.to_pylist()
    lists = pa.ListArray.from_arrays(pa.array([0, 0, len(arr) // 2, len(arr) // 2, len(arr)],
                                              pa.int32()), arr,
                                     mask=pa.array([False, False, True, False]))
    assert pylist(lists) == lists.to_pylist()
    table = pa.table({"t": arr, "n": pa.array(range(len(arr)), pa.int64())})
    assert table_rows(table) == table.to_pylist()
    for v in arr.to_pylist():
        if v is not None:
            assert scalar(v).equals(pa.scalar(v)) and scalar(v).type == pa.scalar(v).type
            naive = v.replace(tzinfo=None)
            assert scalar(naive).equals(pa.scalar(naive))
