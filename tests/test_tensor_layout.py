"""Tensor columns stored as fixed-width bytes in shards (store/tensor_layout.py).

Users, SQL and polars see the dataset's fixed-size lists; only the Parquet file differs. A row
group whose tensor holds a null element starts a shard that keeps lists, so nothing is lost
and a dataset may mix both layouts.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dload_arrow import IntegrityError, Repository
from dload_arrow.repository.dataset import Dataset
from dload_arrow.store.tensor_layout import LAYOUT_KEY, restore, stored_schema, to_stored

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64,
          np.float16, np.float32, np.float64]


def _shards(root: str) -> list[str]:
    return sorted(glob.glob(f"{root}/**/*.parquet", recursive=True))


def _stored(root: str) -> list[pa.Schema]:
    return [pq.read_schema(p) for p in _shards(root)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_number_type_reads_back_equal_and_is_stored_as_bytes(
        repo: Repository, local_root: str, dtype: Any) -> None:
    rng = np.random.default_rng(1)
    values = [rng.integers(0, 100, (2, 3)).astype(dtype) for _ in range(20)]
    repo.commit("t", [(f"k{i:02d}", {"x": v, "flags": np.array([True, False])})
                      for i, v in enumerate(values)], row_group_size=100, progress=False)
    ds = repo.dataset("t")
    assert ds.schema.field("x").type == pa.list_(pa.from_numpy_dtype(dtype), 6)
    for got, want in zip(ds.samples(), values, strict=True):
        assert got["x"].dtype == want.dtype and np.array_equal(got["x"], want)
    (schema,) = _stored(local_root)
    assert schema.field("x").type == pa.binary(6 * np.dtype(dtype).itemsize)
    assert LAYOUT_KEY in schema.field("x").metadata
    assert pa.types.is_fixed_size_list(schema.field("flags").type)  # bools: 8 to a byte
    assert np.array_equal(ds.get("k07")["x"], values[7])  # the random-access path


def _tensors(n: int, null_rows: set[int], null_items: set[int], start: int = 0) -> pa.Table:
    values = pa.array(np.arange(start * 4, (start + n) * 4, dtype=np.float32))
    if null_items:
        mask = np.zeros(n * 4, bool)
        for i in null_items:
            mask[(i - start) * 4 + 1] = True
        values = pa.array(np.arange(start * 4, (start + n) * 4, dtype=np.float32), mask=mask)
    rows = np.array([i in null_rows for i in range(start, start + n)])
    x = pa.FixedSizeListArray.from_arrays(values, 4, mask=pa.array(rows))
    keys = pa.array([f"k{i:03d}" for i in range(start, start + n)])
    return pa.table({"__key__": keys, "x": x, "n": pa.array(range(start, start + n))})


def test_null_rows_stay_null_and_a_null_element_keeps_its_shard_a_list(
        repo: Repository, local_root: str) -> None:
    # rows 0-39 have no null element, 40-79 do (row 41): two layouts in one dataset
    table = pa.concat_tables([_tensors(40, {3, 17}, set()),
                              _tensors(40, {50}, {41}, start=40)])
    repo.commit("t", table, row_group_size=160, shard_size=1, progress=False)
    ds = repo.dataset("t")
    back = ds.to_arrow()
    assert back.column("x").type == pa.list_(pa.float32(), 4)
    assert back.column("x").to_pylist() == table.column("x").to_pylist()
    assert back.column("x").to_pylist()[41][1] is None and back.column("x")[3].as_py() is None
    # one row group a shard: only the shard holding row 41 keeps a list
    for entry in ds.manifest.shards:
        (path,) = glob.glob(f"{local_root}/**/{entry.digest}.parquet", recursive=True)
        packed = LAYOUT_KEY in (pq.read_schema(path).field("x").metadata or {})
        assert packed == (not entry.key_min <= "k041" <= entry.key_max), entry.key_min


def test_the_same_rows_chunked_otherwise_give_the_same_version(repo: Repository) -> None:
    table = pa.concat_tables([_tensors(30, {2}, set()), _tensors(30, set(), {35}, start=30),
                              _tensors(30, set(), set(), start=60)])
    one = repo.commit("a", table, row_group_size=200, shard_size=1000, progress=False)
    parts = [table.slice(i, 7) for i in range(0, 90, 7)]
    two = repo.commit("b", pa.concat_tables(parts), row_group_size=200, shard_size=1000,
                      progress=False)
    assert [s.digest for s in repo.dataset("a").manifest.shards] == \
        [s.digest for s in repo.dataset("b").manifest.shards]
    assert one.version != "" and two.version != ""


def test_sliced_lists_pack_the_right_rows() -> None:
    t = _tensors(10, {4}, set()).slice(3, 5)
    x = t.column("x").chunk(0)
    assert x.offset == 3
    schema = stored_schema(t.schema, ["x"])
    stored = to_stored(t, schema)
    assert stored.column("x").type == pa.binary(16)
    assert restore(stored).column("x").to_pylist() == t.column("x").to_pylist()


def test_sql_and_polars_see_lists_over_both_layouts(repo: Repository) -> None:
    table = pa.concat_tables([_tensors(40, {3}, set()), _tensors(40, set(), {41}, start=40)])
    repo.commit("t", table, row_group_size=160, shard_size=1, progress=False)
    got = repo.sql("SELECT n, x, x[2] AS second FROM samples('t') ORDER BY n")
    assert got.column("x").to_pylist() == table.column("x").to_pylist()
    assert got.column("second").to_pylist() == [
        None if v is None else v[1] for v in table.column("x").to_pylist()]
    summed = repo.sql("SELECT sum(list_sum(x)) AS s FROM samples('t') WHERE n >= 60")
    assert summed.column("s")[0].as_py() == sum(
        sum(float(e) for e in v) for v in table.column("x").to_pylist()[60:])
    ds = repo.dataset("t")
    frame = ds.to_polars().collect()
    assert frame["x"].to_list() == table.column("x").to_pylist()
    # a view of some row groups: polars counts rows over every file, in their order
    units = ds.units_all()
    picked = Dataset(repo, ds.manifest, units=units[1::2])
    want = pa.concat_tables([ds.take([k]) for k in picked.to_arrow().column("__key__")
                             .to_pylist()])
    assert picked.to_polars().collect()["x"].to_list() == want.column("x").to_pylist()


def test_half_floats_read_as_floats_in_sql(repo: Repository) -> None:
    v = np.array([0.5, 1.5, -2.0], np.float16)
    repo.commit("h", [("a", {"x": v})], progress=False)
    got = repo.sql("SELECT x FROM samples('h')").column("x").to_pylist()
    assert got == [[0.5, 1.5, -2.0]]


def test_a_damaged_shard_of_tensors_is_named_in_sql_and_polars(repo: Repository,
                                                               local_root: str) -> None:
    repo.commit("t", [(f"k{i}", {"x": np.arange(4, dtype=np.float32) + i}) for i in range(5)],
                progress=False)
    (path,) = _shards(local_root)
    with open(path, "r+b") as f:  # same size, footer garbled
        f.seek(-40, 2)
        f.write(b"\xff" * 40)
    named = r"shard [0-9a-f]{12} of dataset 't' under file://.* is corrupt"
    with pytest.raises(IntegrityError, match=named):
        repo.sql("SELECT count(*) FROM samples('t')")
    with pytest.raises(IntegrityError, match=named):
        repo.dataset("t").to_polars().collect()


def test_sql_over_no_rows_and_unselected_tensors(repo: Repository) -> None:
    repo.commit("t", [(f"k{i}", {"x": np.arange(4, dtype=np.float32) + i, "n": i})
                      for i in range(5)], progress=False)
    assert repo.sql("SELECT x FROM samples('t') WHERE n < 0").num_rows == 0
    assert repo.sql("SELECT count(*) AS c FROM samples('t')").column("c")[0].as_py() == 5
    got = repo.sql("SELECT x FROM samples('t') WHERE x[1] = 3")
    assert got.column("x").to_pylist() == [[3.0, 4.0, 5.0, 6.0]]


def test_a_shard_read_by_hand_commits_back_as_tensors(repo: Repository,
                                                       local_root: str) -> None:
    x = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float32)), 3)
    field = pa.field("x", x.type, metadata={b"dload.shape": b"[3]"})
    repo.commit("src", pa.table({"__key__": ["k0", "k1", "k2", "k3"], "x": x},
                                schema=pa.schema([("__key__", pa.string()), field])),
                progress=False)
    (shard,) = _shards(local_root)
    raw = pq.read_table(shard)
    assert pa.types.is_fixed_size_binary(raw.schema.field("x").type)
    v = repo.commit("copy", raw, progress=False)
    assert repo.dataset("copy").schema.field("x").type == x.type
    assert repo.dataset("copy").to_arrow().column("x").to_pylist() == x.to_pylist()
    assert v.shards_uploaded == 0  # the same shard: the data came back whole


def test_a_stale_mark_on_a_users_column_is_not_trusted(repo: Repository,
                                                        local_root: str) -> None:
    mark = {LAYOUT_KEY: b'{"type": "float", "name": "item", "nullable": true}'}
    b = pa.array([b"abcdefgh", b"12345678"], pa.binary(8))
    bad = pa.array([b"abcdefg", b"1234567"], pa.binary(7))  # 7 bytes: no float32 list
    schema = pa.schema([("__key__", pa.string()), pa.field("b", b.type, metadata=mark),
                        pa.field("c", bad.type, metadata=mark)])
    repo.commit("t", pa.table({"__key__": ["a", "b"], "b": b, "c": bad}, schema=schema),
                progress=False)
    got = repo.dataset("t").to_arrow()
    assert got.column("c").to_pylist() == bad.to_pylist()
    for s in _stored(local_root):
        assert LAYOUT_KEY not in (s.field("c").metadata or {})


def test_an_int_tensor_with_a_missing_element_keeps_its_exact_values(
        repo: Repository) -> None:
    typ = pa.list_(pa.int64(), 2)
    field = pa.field("x", typ, metadata={b"dload.shape": b"[2]"})
    big = 2**60 + 1
    t = pa.table({"__key__": ["a", "b"], "x": pa.array([[big, None], [1, 2]], typ)},
                 schema=pa.schema([("__key__", pa.string()), field]))
    repo.commit("t", t, progress=False)
    ds = repo.dataset("t")
    for cell in (next(iter(ds.samples()))["x"], ds.get("a")["x"], ds[0]["x"]):
        assert cell.dtype == object and cell.tolist() == [big, None]
    assert ds.get("b")["x"].tolist() == [1, 2]


def test_many_alternating_layouts_keep_the_files_order_in_polars_and_sql(
        repo: Repository) -> None:
    n = 40  # odd rows hold a null element: 40 shards, 40 runs of one layout
    mask = np.zeros(n * 4, bool)
    mask[[r * 4 + 1 for r in range(1, n, 2)]] = True
    x = pa.FixedSizeListArray.from_arrays(
        pa.array(np.arange(n * 4, dtype=np.float32), mask=mask), 4)
    table = pa.table({"__key__": [f"k{i:03d}" for i in range(n)], "x": x, "n": np.arange(n)})
    repo.commit("t", table, shard_size=1, row_group_size=1, progress=False)
    ds = repo.dataset("t")
    assert len(ds.manifest.shards) == n
    frame = ds.to_polars().collect()
    assert frame["n"].to_list() == list(range(n))
    assert frame["x"].to_list() == table.column("x").to_pylist()
    assert frame.columns == ["__key__", "x", "n"]
    picked = Dataset(repo, ds.manifest, units=ds.units_all()[1::3])
    want = picked.to_arrow()
    got = picked.to_polars().collect()
    assert got["n"].to_list() == want.column("n").to_pylist() == list(range(1, n, 3))
    assert got["x"].to_list() == want.column("x").to_pylist()
    rows = repo.sql("SELECT n, x FROM samples('t')")
    assert rows.column("n").to_pylist() == list(range(n))
    assert rows.column("x").to_pylist() == table.column("x").to_pylist()


def test_tensors_stored_as_bytes_carry_no_statistics(repo: Repository,
                                                     local_root: str) -> None:
    emb = np.random.default_rng(0).standard_normal((50, 768)).astype(np.float32)
    repo.commit("e", [(f"k{i:02d}", {"emb": e, "tags": [1, 2], "n": i})
                      for i, e in enumerate(emb)], row_group_size="64KB", progress=False)
    (path,) = _shards(local_root)
    meta = pq.read_metadata(path)
    assert meta.num_row_groups > 1
    for r in range(meta.num_row_groups):
        cols = {meta.row_group(r).column(i).path_in_schema: meta.row_group(r).column(i)
                for i in range(meta.row_group(r).num_columns)}
        assert not cols["emb"].is_stats_set and not cols["emb"].has_column_index
        assert cols["n"].is_stats_set and cols["tags.list.element"].is_stats_set
    assert meta.serialized_size < 20_000  # not 3 KB min and max per row group and page
    assert np.array_equal(np.stack([s["emb"] for s in repo.dataset("e").samples()]), emb)


def test_a_dataset_with_tensors_has_a_format_older_readers_refuse(repo: Repository) -> None:
    repo.commit("t", [("a", {"x": np.zeros(3, np.float32)})], progress=False)
    repo.commit("s", [("a", {"x": 1.0, "flags": np.array([True, False])})], progress=False)
    assert repo.manifest("t").info["format"] == 3  # c0ac5d9 and before read only 1 and 2
    assert repo.manifest("s").info["format"] == 1  # no tensor of numbers: as before


def test_a_fixed_shape_tensor_column_beside_a_tensor_commits(repo: Repository) -> None:
    arr = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    fst = pa.FixedShapeTensorArray.from_numpy_ndarray(arr)
    plain = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(8, dtype=np.int16)), 2)
    table = pa.table({"__key__": ["a", "b", "c", "d"], "t": fst, "p": plain})
    repo.commit("f", table, progress=False)
    back = repo.dataset("f").to_arrow()
    assert back.column("p").to_pylist() == plain.to_pylist()
    assert np.array_equal(back.column("t").combine_chunks().to_numpy_ndarray(), arr)


def test_helper_columns_of_many_runs_never_take_a_users_name(repo: Repository) -> None:
    n = 40
    mask = np.zeros(n * 2, bool)
    mask[[r * 2 for r in range(1, n, 2)]] = True
    x = pa.FixedSizeListArray.from_arrays(
        pa.array(np.arange(n * 2, dtype=np.float32), mask=mask), 2)
    cols = {"__key__": [f"k{i:03d}" for i in range(n)], "x": x}
    cols.update({c: np.arange(n) + j for j, c in enumerate(
        ("__dload_file__", "__dload_at__", "__dload_row__"))})
    repo.commit("t", pa.table(cols), shard_size=1, row_group_size=1, progress=False)
    frame = repo.dataset("t").to_polars().collect()
    assert frame.columns == list(cols)
    assert frame["__dload_at__"].to_list() == list(range(1, n + 1))
    assert frame["x"].to_list() == x.to_pylist()


def test_a_shard_damaged_after_a_query_is_still_named(repo: Repository,
                                                      local_root: str) -> None:
    repo.commit("t", [(f"k{i}", {"x": np.arange(4, dtype=np.float32) + i}) for i in range(5)],
                progress=False)
    assert repo.sql("SELECT count(*) AS c FROM samples('t')").column("c")[0].as_py() == 5
    (path,) = _shards(local_root)
    Path(path).write_bytes(b"garbage" * 100)
    named = r"shard [0-9a-f]{12} of dataset 't' under file://.* is corrupt"
    with pytest.raises(IntegrityError, match=named):
        repo.sql("SELECT count(*) FROM samples('t')")


def test_the_cli_commits_and_appends_a_shard_copied_out_of_a_root(
        repo: Repository, local_root: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from cli_run import runner

    run = runner(capsys, ["--root", local_root])
    rows = [(f"k{i}", {"x": np.arange(3, dtype=np.float32) + i}) for i in range(4)]
    repo.commit("src", rows, progress=False)
    repo.commit("dst", [("z", {"x": np.zeros(3, np.float32)})], progress=False)
    digest = repo.dataset("src").manifest.shards[0].digest
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(Path(glob.glob(f"{local_root}/**/{digest}.parquet",
                                    recursive=True)[0]).read_bytes())
    run("append", "dst", "--from", str(copy))
    run("commit", "again", "--from", str(copy))
    for name in ("dst", "again"):
        ds = repo.dataset(name)
        assert ds.schema.field("x").type == pa.list_(pa.float32(), 3)
        got = {s["__key__"]: s["x"].tolist() for s in ds.samples()}
        assert all(got[k] == v["x"].tolist() for k, v in rows), name


@pytest.mark.parametrize("item", [pa.int64(), pa.bool_(), pa.float32()], ids=str)
def test_export_of_a_tensor_with_a_missing_element_never_changes_a_value(
        repo: Repository, local_root: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], item: pa.DataType) -> None:
    from cli_run import runner

    run = runner(capsys, ["--root", local_root])
    typ = pa.list_(item, 3)
    field = pa.field("v", typ, metadata={b"dload.shape": b"[3]"})
    vals = [[True, None, True]] if item == pa.bool_() else [[1, None, 3]]
    repo.commit("t", pa.table([pa.array(["k"]), pa.array(vals, typ)],
                              schema=pa.schema([("__key__", pa.string()), field])),
                progress=False)
    out = tmp_path / "out"
    if item == pa.float32():  # NaN is a float's missing value: written as get() gives it
        run("export", "t", "k", "--to", str(out))
        assert np.isnan(np.load(out / "k.v")[1])
        return
    got = run("export", "t", "k", "--to", str(out), rc=1)
    assert "column 'v'" in got.err and "missing element" in got.err
    assert not (out / "k.v").exists()


def test_a_shard_read_by_polars_and_appended_back_is_named_as_raw_tensor_bytes(
        repo: Repository, local_root: str) -> None:
    import polars as pl

    from dload_arrow import SchemaError
    repo.commit("t", [(f"k{i}", {"x": np.full((2, 2), i, np.float32)}) for i in range(4)],
                progress=False)
    frame = pl.read_parquet(_shards(local_root)[0])  # polars sees the tensor's bytes
    frame = frame.with_columns(pl.col("__key__") + "_b")
    with pytest.raises(SchemaError, match=r"'x'.*16 bytes, the raw bytes a shard stores.*"
                       r"bin\.reinterpret\(dtype=pl\.Array\(pl\.Float32, 4\)\)"):
        repo.append("t", frame)
    fixed = frame.with_columns(pl.col("x").bin.reinterpret(dtype=pl.Array(pl.Float32, 4)))
    repo.append("t", fixed)  # the fix the message gives
    got = repo.dataset("t").get("k3_b")["x"]
    assert got.dtype == np.float32 and np.array_equal(got, np.full((2, 2), 3, np.float32))
