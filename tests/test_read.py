"""The reader: one batch per unit, projection, predicates, samples, holds released."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dload_arrow import Dataset, IntegrityError, Repository, SchemaError
from dload_arrow.read.cache import Cache
from dload_arrow.read.reader import all_units, iter_units
from dload_arrow.read.samples import batch_to_samples

N = 400


def _samples(n: int = N) -> list[tuple[str, dict]]:
    return [
        (f"k{i:05d}", {
            "x": i,
            "name": f"n{i}",
            "tensor": np.arange(6, dtype=np.float32).reshape(2, 3) + i,
            "blob": bytes([i % 256]) * 30,
            "tags": [i, i + 1],
        })
        for i in range(n)
    ]


@pytest.fixture
def ds(any_repo: Repository) -> Dataset:
    any_repo.commit("d", _samples(), shard_size=4000, row_group_size=1200, progress=False)
    d = any_repo.dataset("d")
    assert len(d.manifest.shards) >= 3 and all(len(s.rg_rows) >= 2 for s in d.manifest.shards[:3])
    return d


def _unit_keys(d: Dataset, unit: tuple[int, int]) -> list[str]:
    s = d.manifest.shards[unit[0]]
    start = s.row_offset + sum(s.rg_rows[: unit[1]])
    return [f"k{i:05d}" for i in range(start, start + s.rg_rows[unit[1]])]


def test_one_batch_per_unit_in_the_given_order_with_repeats(ds: Dataset) -> None:
    units = [(1, 0), (0, 1), (0, 1), (2, 1), (0, 0), (1, 0)]
    batches = list(iter_units(ds.context, ds.manifest, units, prefetch=2))
    assert len(batches) == len(units)
    for unit, b in zip(units, batches, strict=False):
        assert isinstance(b, pa.RecordBatch)
        assert b.column("__key__").to_pylist() == _unit_keys(ds, unit)
        assert b.schema.names == ds.schema.names


def test_all_units_cover_every_row_once(ds: Dataset) -> None:
    keys = [k for b in iter_units(ds.context, ds.manifest, all_units(ds.manifest))
            for k in b.column(0).to_pylist()]
    assert keys == [f"k{i:05d}" for i in range(N)]
    assert ds.units_all() == all_units(ds.manifest)


def test_projection_always_leads_with_the_key(ds: Dataset) -> None:
    units = ds.units_all()[:2]
    for cols in (["x"], ["x", "__key__"], ["__key__", "x"]):
        b = next(iter_units(ds.context, ds.manifest, units, columns=cols))
        assert b.schema.names == ["__key__", "x"]
    b = next(iter_units(ds.context, ds.manifest, units, columns=["blob", "x"]))
    assert b.schema.names == ["__key__", "blob", "x"]
    with pytest.raises(SchemaError, match="nope"):
        iter_units(ds.context, ds.manifest, units, columns=["nope"])


def test_a_predicate_filters_rows_and_may_use_unprojected_columns(ds: Dataset) -> None:
    units = ds.units_all()
    pred = ((pc.field("x") < 50) | (pc.field("x") >= 380)) & (pc.field("name") != "n14")
    batches = list(iter_units(ds.context, ds.manifest, units, columns=["blob"], predicate=pred))
    assert len(batches) == len(units)  # empty units still yield a batch
    assert any(b.num_rows == 0 for b in batches)
    keys = [k for b in batches for k in b.column("__key__").to_pylist()]
    assert keys == [f"k{i:05d}" for i in range(N) if (i < 50 or i >= 380) and i != 14]
    assert all(b.schema.names == ["__key__", "blob"] for b in batches)


def test_unit_out_of_range_is_refused(ds: Dataset) -> None:
    with pytest.raises(IndexError, match="shards"):
        iter_units(ds.context, ds.manifest, [(99, 0)])


def test_samples_have_keys_shaped_tensors_and_bytes(ds: Dataset) -> None:
    samples = list(ds.samples())
    assert [s["__key__"] for s in samples] == [f"k{i:05d}" for i in range(N)]
    s = samples[17]
    assert s["x"] == 17 and s["name"] == "n17" and s["tags"] == [17, 18]
    assert isinstance(s["blob"], bytes) and s["blob"] == bytes([17]) * 30
    assert isinstance(s["tensor"], np.ndarray) and s["tensor"].shape == (2, 3)
    np.testing.assert_array_equal(s["tensor"], np.arange(6, dtype=np.float32).reshape(2, 3) + 17)
    s["tensor"][0, 0] = -1  # writeable, and owned by this batch only
    assert list(ds.samples(columns=["x"]))[3] == {"__key__": "k00003", "x": 3}


def test_batch_to_samples_matches_to_pylist_for_plain_columns() -> None:
    t = pa.table({"__key__": ["a", "b"], "v": [1.5, None], "l": [[1], []], "s": ["x", None]})
    assert batch_to_samples(t) == t.to_pylist()
    shape = {b"dload.shape": b"[2]"}
    arr = pa.array([[1, 2], None], pa.list_(pa.int64(), 2))
    t2 = pa.table([pa.array(["a", "b"]), arr],
                  schema=pa.schema([pa.field("__key__", pa.string()),
                                    pa.field("t", arr.type, metadata=shape)]))
    out = batch_to_samples(t2)
    assert out[1]["t"] is None and out[0]["t"].tolist() == [1, 2]


def test_a_filtered_view_reads_only_its_units_and_rows(ds: Dataset) -> None:
    units = [ds.units_all()[3], ds.units_all()[1]]
    odd = pc.bit_wise_and(pc.field("x"), 1) == 1
    view = Dataset(ds.repo, ds.manifest, units=units, predicate=odd)
    keys = [s["__key__"] for s in view.samples(["x"])]
    expected = [k for u in units for k in _unit_keys(ds, u) if int(k[1:]) % 2 == 1]
    assert keys == expected and keys


def test_stopping_early_releases_every_hold(memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    repo.commit("d", _samples(), shard_size=4000, row_group_size=1200, progress=False)
    it = repo.dataset("d").batches(prefetch=3)
    next(it)
    cache = Cache(cache_dir, "unlimited")
    deadline = time.monotonic() + 30
    while len(cache.entries()) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)  # the fetcher brings the next three shards in the background
    entries = cache.entries()
    # The shard being read is held; the ones fetched ahead are cached but not held (evictable
    # until the reader reaches them, so they never keep another reader's shard out).
    assert len(entries) == 4 and 1 <= sum(e.held for e in entries) <= 2
    it.close()
    deadline = time.monotonic() + 30
    while any(e.held for e in cache.entries()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(e.held for e in cache.entries())


def test_the_first_big_shard_is_read_while_its_one_get_is_still_writing_it(
        s3_root: str, cache_dir: str, s3_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Time to first batch: row groups of a still-downloading first shard are decoded from the
    # download's temp file as their bytes arrive (the footer costs one small ranged GET);
    # every batch is the same as from the cached file, and the shard is still fetched (and
    # verified) with exactly one GET.
    import dload_arrow.read.reader as reader

    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    rng = np.random.default_rng(5)
    samples = [(f"k{i:05d}", {"x": i, "blob": rng.bytes(300)}) for i in range(2000)]
    repo.commit("d", samples, shard_size=200_000, row_group_size=20_000, progress=False)
    m = repo.manifest("d")
    assert len(m.shards) > 1
    first = m.shards[0].digest
    monkeypatch.setattr(reader, "_EARLY_MIN_BYTES", 0)
    s3_server.clear()
    s3_server.throttle(first, 1.5)  # the first shard trickles in over 1.5 s
    try:
        it = iter_units(repo.read_context, m, all_units(m))
        head = next(it)
        cache = repo.read_context.cache()
        assert cache.partial_file(first) is not None  # decoded while the GET still runs
        assert not cache.is_cached(first, m.shards[0].bytes)
        got = pa.Table.from_batches([head, *it])
    finally:
        s3_server.slow = None
    assert s3_server.count("GET", contains=first, ranged=True) == 1  # the footer
    assert s3_server.count("GET", contains=first, ranged=False) == 1
    for s in m.shards[1:]:
        assert s3_server.count("GET", contains=s.digest) == 1
    assert got.column("x").to_pylist() == list(range(2000))
    assert got.column("__key__").to_pylist() == [k for k, _ in samples]
    assert cache.is_cached(first, m.shards[0].bytes)


def test_the_first_shards_footer_is_fetched_before_its_download_sends_a_byte(
        s3_root: str, cache_dir: str, s3_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The footer's ranged GET starts with the download, not once the first row group's bytes
    # are in: the first item waits for the slower of the two, not for both in a row.
    import threading

    import dload_arrow.read.reader as reader

    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    samples = [(f"k{i:05d}", {"x": i}) for i in range(2000)]
    repo.commit("d", samples, shard_size=20_000, row_group_size=500, progress=False)
    m = repo.manifest("d")
    first = m.shards[0].digest
    monkeypatch.setattr(reader, "_EARLY_MIN_BYTES", 0)
    s3_server.clear()
    release = threading.Event()
    s3_server.held = (first, release)
    got: list[pa.RecordBatch] = []
    reading = threading.Thread(target=lambda: got.extend(
        iter_units(repo.read_context, m, all_units(m))))
    try:
        reading.start()
        deadline = time.monotonic() + 10
        # the download is held (sends no byte) until release
        while not (s3_server.count("GET", contains=first, ranged=True)
                   and s3_server.count("GET", contains=first, ranged=False)):
            assert time.monotonic() < deadline, "no footer GET while the download was held"
            time.sleep(0.01)
        assert not got
    finally:
        release.set()
        s3_server.held = None
        reading.join(30)
    assert not reading.is_alive()
    assert pa.Table.from_batches(got).column("x").to_pylist() == list(range(2000))
    assert s3_server.count("GET", contains=first, ranged=True) == 1


@pytest.mark.parametrize("shuffled", [True, False])
def test_a_shuffled_first_shard_downloads_before_the_shards_ahead(
        s3_root: str, cache_dir: str, s3_server: Any, shuffled: bool) -> None:
    # A shuffled window draws row groups from all over its first shard, so it waits for nearly
    # the whole shard: the shards ahead start downloading only when that one is there, instead
    # of sharing its bandwidth. Read in storage order (the first rows come early), they start
    # at once.
    import threading

    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    rng = np.random.default_rng(7)
    samples = [(f"k{i:05d}", {"x": i, "blob": rng.bytes(300)}) for i in range(2000)]
    repo.commit("d", samples, shard_size=200_000, row_group_size=20_000, progress=False)
    m = repo.manifest("d")
    first, second = m.shards[0].digest, m.shards[1].digest
    units = all_units(m)
    head = [u for u in units if u[0] == 0]
    assert len(head) > 2
    if shuffled:
        units = head[::-1] + units[len(head):]
    s3_server.clear()
    s3_server.throttle(first, 1.5)
    got: list[pa.RecordBatch] = []
    try:
        reading = threading.Thread(target=lambda: got.extend(
            iter_units(repo.read_context, m, units)))
        reading.start()
        deadline = time.monotonic() + 10
        while not s3_server.count("GET", contains=first, ranged=False):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.5)  # the first shard is still trickling in
        assert not repo.read_context.cache().is_cached(first, m.shards[0].bytes)
        assert s3_server.count("GET", contains=second) == (0 if shuffled else 1)
        reading.join(30)
    finally:
        s3_server.slow = None
    assert not reading.is_alive()
    for s in m.shards:
        assert s3_server.count("GET", contains=s.digest, ranged=False) == 1
    want = {k: r["x"] for k, r in samples}
    rows = pa.Table.from_batches(got)
    assert sorted(rows.column("__key__").to_pylist()) == sorted(want)
    assert all(want[k] == x for k, x in zip(rows.column("__key__").to_pylist(),
                                            rows.column("x").to_pylist(), strict=True))


def test_a_corrupt_first_shard_read_while_downloading_still_fails_its_check(
        s3_root: str, cache_dir: str, s3_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows decoded from the download's temp file are not verified yet: the stream must not
    # end (or move past the shard) before the shard's sha256 has passed, and a row of a page
    # that fails its CRC is never handed out (QA 8: 4,500 rows, one of them wrong, came
    # before the error).
    import dload_arrow.read.reader as reader
    from dload_arrow.store.names import shard_path

    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    rng = np.random.default_rng(6)
    blobs = [rng.bytes(300) for _ in range(1500)]
    repo.commit("d", [(f"k{i:05d}", {"x": i, "blob": b}) for i, b in enumerate(blobs)],
                shard_size=10_000_000, row_group_size=20_000, progress=False)
    m = repo.manifest("d")
    entry = m.shards[0]
    data = bytearray(repo.storage.read(shard_path(entry.digest)))
    data[entry.rg_offsets[0] + entry.rg_bytes[0] // 2] ^= 0x01  # inside a blob's bytes
    repo.storage.write(shard_path(entry.digest), bytes(data))
    monkeypatch.setattr(reader, "_EARLY_MIN_BYTES", 0)
    s3_server.throttle(entry.digest, 1.0)
    wrong = 0
    try:
        with pytest.raises(IntegrityError, match="hash"):
            for batch in iter_units(repo.read_context, m, all_units(m)):
                xs, got = batch.column("x").to_pylist(), batch.column("blob").to_pylist()
                wrong += sum(blobs[x] != b for x, b in zip(xs, got, strict=True))
    finally:
        s3_server.slow = None
    assert wrong == 0


def test_threads_pay_off_only_beside_a_large_column() -> None:
    """Arrow's column threads are used when other columns hold half the largest one's bytes;
    not for a row group of one big column (images, token lists), whatever the names."""
    from dload_arrow.read.reader import threads_pay_off

    n = 200
    rng = np.random.default_rng(0)
    blobs = pa.array([rng.bytes(2000) for _ in range(n)], pa.binary())
    ints = [pa.array(rng.integers(0, 2**40, n)) for _ in range(4)]
    image = pa.table({"__key__": [f"k{i}" for i in range(n)], "a.b": blobs,
                      "label": ints[0]})
    assert not threads_pay_off(image)
    assert threads_pay_off(image.select(["__key__", "label"]))  # the big column not projected
    assert threads_pay_off(pa.table({f"c{i}": a for i, a in enumerate(ints)}))
    tokens = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.integers(0, 50_000, n * 512).astype(np.int32)), 512)
    lists = pa.table({"__key__": [f"k{i}" for i in range(n)], "tokens": tokens})
    assert not threads_pay_off(lists)
    assert threads_pay_off(lists.select(["tokens"])) is False
    assert threads_pay_off(lists.select([])) is True  # nothing to decode: Arrow's default



def test_a_bool_tensor_column_with_nulls_reads_as_samples(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "r", cache_dir=tmp_path / "c")
    repo.commit("b", [(f"k{i}", {"b": np.array([True, False]) if i % 2 else None})
                      for i in range(4)], progress=False)
    got = [s["b"] for s in repo.dataset("b").samples()]
    assert got[0] is None and got[2] is None
    assert got[1].tolist() == [True, False] and got[1].dtype == np.bool_
