"""Operator semantics, check(), fingerprint(), views and collation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pipeline_cases
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import dload_arrow as dl
from dload_arrow import InfeasiblePlanError, Repository
from dload_arrow.sizes import format_bytes_up

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ops")
    pipeline_cases.make_datasets(str(path))
    return str(path)


def test_pipelines_are_lazy_and_reiterable(root: str) -> None:
    calls = []
    p = pipeline_cases.ds(root).map(lambda r: calls.append(1) or r["x"])
    assert calls == []
    assert list(p) == list(range(300)) == list(p)
    assert len(calls) == 600


def test_dataset_rows_are_dicts_with_numpy_tensors(root: str) -> None:
    row = next(iter(pipeline_cases.ds(root, "vecs").pipeline()))
    assert row["__key__"] == "v0000" and row["x"] == 20_000
    assert isinstance(row["v"], np.ndarray) and row["v"].shape == (4,)


def test_batch_collates_columns_to_numpy(root: str) -> None:
    b = next(iter(pipeline_cases.ds(root, "vecs").batch(5)))
    assert b["x"].tolist() == list(range(20_000, 20_005))
    assert b["v"].shape == (5, 4) and b["v"].dtype == np.float32
    assert b["__key__"] == [f"v{i:04d}" for i in range(5)]
    dicts = next(iter(dl.from_iterable([{"a": 1, "t": np.zeros(2)}] * 3).batch(3)))
    assert dicts["a"].tolist() == [1, 1, 1] and dicts["t"].shape == (3, 2)


def test_batch_sizes_drop_last_and_custom_collate() -> None:
    p = dl.from_iterable(list(range(10)))
    assert [len(b) for b in p.batch(4)] == [4, 4, 2]
    assert [len(b) for b in p.batch(4, drop_last=True)] == [4, 4]
    assert list(p.batch(5, collate=lambda c: sum(c))) == [10, 35]
    with pytest.raises(ValueError, match="batch size"):
        p.batch(0)


def test_unbatch_inverts_batch(root: str) -> None:
    p = pipeline_cases.ds(root).pipeline(columns=["x"])
    assert [r["x"] for r in p.batch(7).unbatch()] == list(range(300))


def test_columns_projection_keeps_the_key(root: str) -> None:
    row = next(iter(pipeline_cases.ds(root, "letters").pipeline(columns=["s"])))
    assert set(row) == {"__key__", "s"}


def test_map_batches_sees_record_batches_and_accepts_polars(root: str) -> None:
    seen = []

    def f(b: pa.RecordBatch) -> pa.RecordBatch:
        seen.append(type(b))
        return pipeline_cases.add_col_polars(b)

    out = [r["x1"] for r in pipeline_cases.ds(root, "letters").map_batches(f)]
    assert out == [10_001 + i for i in range(120)]
    assert set(seen) == {pa.RecordBatch}
    with pytest.raises(ValueError, match="rows_preserved"):
        list(pipeline_cases.ds(root).map_batches(lambda b: b.slice(0, 1), rows_preserved=True))


def test_filter_flat_map_scan_take_skip_select(root: str) -> None:
    p = pipeline_cases.ds(root).pipeline()
    assert [r["x"] for r in p.filter(lambda r: r["g"] == 0)] == list(range(0, 300, 7))
    assert [r["x"] for r in p.filter(pc.field("g") == 0)] == list(range(0, 300, 7))
    assert list(p.map(lambda r: r["x"]).take(3).flat_map(lambda x: [x, x])) == [0, 0, 1, 1, 2, 2]
    assert list(p.take(4).scan(lambda a, r: (a + r["x"], a + r["x"]), 0)) == [0, 1, 3, 6]
    assert [r["x"] for r in p.skip(295)] == list(range(295, 300))
    assert list(p.select("g").take(2)) == [{"g": 0}, {"g": 1}]
    assert list(p.through(lambda q: q.take(1)).map(lambda r: r["x"])) == [0]


def test_repeat_reshuffles_each_pass(root: str) -> None:
    p = pipeline_cases.ds(root, "letters").shuffle(20, seed=1).map(pipeline_cases.xs)
    out = list(p.repeat(3))
    a, b, c = out[:120], out[120:240], out[240:]
    assert sorted(a) == sorted(b) == sorted(c) and a != b != c
    assert len(list(dl.from_iterable([1, 2]).repeat(0))) == 0
    assert list(dl.from_iterable([]).repeat()) == []


def test_concat_and_zip(root: str) -> None:
    a, b = dl.from_iterable([1, 2, 3]), dl.from_iterable([10, 20])
    assert list(dl.concat([a, b])) == [1, 2, 3, 10, 20]
    assert list(dl.zip_with([a, b])) == [(1, 10), (2, 20)]
    assert list(dl.zip_with([a, b], lambda x, y: x + y)) == [11, 22]


def test_from_iterable_factories_and_one_shot_iterators() -> None:
    p = dl.from_iterable(lambda epoch: iter([epoch] * 2))
    assert list(p) == [0, 0] and list(p) == [1, 1]
    one = dl.from_iterable(iter([1, 2]))
    assert list(one) == [1, 2]
    with pytest.raises(RuntimeError, match="one-shot"):
        list(one)
    with pytest.raises(TypeError, match="iterable"):
        dl.from_iterable(3)


def test_random_stream_is_counter_based_and_skips_exactly() -> None:
    a = list(dl.random_stream(3).take(5000))
    assert all(0 <= x < 1 for x in a)
    assert list(dl.random_stream(3).skip(4321).take(10)) == a[4321:4331]
    ints = list(dl.random_stream(3, high=4).take(1000))
    assert set(ints) == {0, 1, 2, 3}


def test_random_stream_of_wide_items_draws_a_few_at_a_time() -> None:
    import tracemalloc

    size = 100_000  # 0.8 MB an item: a block of 4,096 of them would be 3.3 GB
    tracemalloc.start()
    try:
        first = next(iter(dl.random_stream(5, size=size)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first.shape == (size,) and peak < 40 * first.nbytes
    wide = dl.random_stream(5, size=size)
    a = list(wide.take(25))
    b = list(wide.skip(17).take(3))
    assert all(np.array_equal(x, y) for x, y in zip(b, a[17:20], strict=True))
    assert not np.array_equal(a[0], a[1])


def test_view_honours_units_and_predicate(root: str) -> None:
    view = pipeline_cases.view(root)
    got = sorted(r["x"] for r in view.pipeline())
    m = view.manifest
    starts = {}
    for s in m.shards:
        off = s.row_offset
        for rg, n in enumerate(s.rg_rows):
            starts[(s.index, rg)] = range(off, off + n)
            off += n
    expected = sorted(x for u in view.units for x in starts[u] if x % 7 == 2)
    assert got == expected and 0 < len(got) < 300 // 7 + 1


def test_check_reports_sources_budget_and_verdict(root: str) -> None:
    p = dl.mix([pipeline_cases.ds(root).shuffle(40, seed=1),
                pipeline_cases.ds(root, "letters").shuffle(full=True)], [0.5, 0.5])
    report = p.check()
    assert report.feasible
    assert [s.order for s in report.sources] == ["windowed", "full"]
    assert [s.dataset for s in report.sources] == ["nums", "letters"]
    text = str(report)
    assert "nums@" in text and "letters@" in text and "verdict: ok" in text


def test_iter_refuses_an_infeasible_full_shuffle_before_any_io(
    s3_root: str, s3_server: object, tmp_path: Path
) -> None:
    repo = Repository.open(s3_root, cache_dir=str(tmp_path / "c"), cache_budget="unlimited")
    repo.commit("big", [(f"k{i:04d}", {"x": i, "pad": np.random.default_rng(i).bytes(200).hex()})
                       for i in range(400)], shard_size=40_000, progress=False)
    small = Repository.open(s3_root, cache_dir=str(tmp_path / "small"), cache_budget="30KB")
    pipe = small.dataset("big").shuffle(full=True, seed=1)
    assert not pipe.check().feasible
    s3_server.clear()  # type: ignore[attr-defined]
    with pytest.raises(InfeasiblePlanError, match="budget"):
        iter(pipe)
    assert s3_server.count("GET", contains="shards/") == 0  # type: ignore[attr-defined]


def test_fingerprint_is_stable_across_processes_and_sensitive_to_definitions(root: str) -> None:
    make = pipeline_cases.CASES["chain"]
    fp = make(root).fingerprint()
    assert fp == make(root).fingerprint()
    code = ("import pipeline_cases as c; "
            f"print(c.CASES['chain']({root!r}).fingerprint())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(HERE), "PYTHONHASHSEED": "7",
                                          "HOME": str(Path.home())})
    assert out.stdout.strip() == fp
    base = pipeline_cases.ds(root)
    variants = {
        base.shuffle(40, seed=1).fingerprint(), base.shuffle(40, seed=2).fingerprint(),
        base.shuffle(41, seed=1).fingerprint(), base.shuffle(full=True).fingerprint(),
        base.map(pipeline_cases.double).fingerprint(), base.map(pipeline_cases.xs).fingerprint(),
        base.map(lambda r: r["x"] + 1).fingerprint(), base.map(lambda r: r["x"] + 2).fingerprint(),
        pipeline_cases.ds(root, "letters").pipeline().fingerprint(),
    }
    assert len(variants) == 9


def test_state_dict_before_iteration_and_restore_mid_batch(root: str) -> None:
    p = pipeline_cases.ds(root).shuffle(50, seed=3).map(pipeline_cases.xs).batch(8)
    assert p.state_dict()["epoch"] == 0 and p.state_dict()["cursor"] is None
    full = [b for b in p]
    p.set_epoch(0)
    it = iter(p)
    head = [next(it) for _ in range(5)]
    state = p.state_dict()
    q = pipeline_cases.ds(root).shuffle(50, seed=3).map(pipeline_cases.xs).batch(8)
    q.load_state_dict(state)
    assert [x.tolist() if hasattr(x, "tolist") else x for x in head + list(q)] == [
        x.tolist() if hasattr(x, "tolist") else x for x in full]
    with pytest.raises(ValueError, match="not a pipeline state"):
        q.load_state_dict({"nope": 1})


def test_iter_chunks_yields_record_batches(root: str) -> None:
    chunks = list(pipeline_cases.ds(root).pipeline().iter_chunks())
    assert all(isinstance(c, pa.RecordBatch) for c in chunks)
    assert sum(c.num_rows for c in chunks) == 300


def test_repr_names_the_operators(root: str) -> None:
    text = repr(pipeline_cases.ds(root).shuffle(40, seed=1).map(pipeline_cases.xs).batch(4))
    assert text.startswith("dataset(dataset='nums'") and ".map(fn=xs).batch(size=4" in text


def test_schema_passes_through_row_preserving_operators(root: str) -> None:
    base = pipeline_cases.ds(root, "vecs")
    assert base.pipeline().schema == base.schema
    assert base.shuffle(40).shard(0, 2).skip(1).take(5).schema == base.schema
    assert base.batch(4).schema is None  # items are batches, not rows
    assert base.pipeline().select(["x"]).schema.names == ["x"]
    assert base.map(pipeline_cases.xs).schema is None
    assert base.pipeline(columns=["v"]).schema.names == ["__key__", "v"]


@pytest.mark.parametrize("order", ["windowed", "full", "sequential"])
def test_a_shuffled_epoch_decodes_each_row_group_once(
    root: str, order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dload_arrow.read.reader as reader

    seen: list[tuple[int, int]] = []
    real = reader.iter_units

    def spy(ctx, manifest, units, *a, **kw):  # type: ignore[no-untyped-def]
        seen.extend(units)
        return real(ctx, manifest, units, *a, **kw)

    monkeypatch.setattr(reader, "iter_units", spy)
    ds = pipeline_cases.ds(root)
    pipe = {"windowed": ds.shuffle(40, seed=1), "full": ds.shuffle(full=True, seed=1),
            "sequential": ds.pipeline()}[order]
    assert sorted(r["x"] for r in pipe) == list(range(300))
    all_units = [(s.index, rg) for s in ds.manifest.shards for rg in range(len(s.rg_rows))]
    assert len(all_units) > 4
    assert sorted(seen) == sorted(all_units)


def test_a_pipeline_pickles_mid_iteration_with_its_state(root: str) -> None:
    import pickle

    pipe = pipeline_cases.ds(root).shuffle(40, seed=2).map(pipeline_cases.xs)
    it = iter(pipe)
    head = [next(it) for _ in range(17)]
    copy = pickle.loads(pickle.dumps(pipe))
    copy.load_state_dict(pipe.state_dict())
    assert head + list(copy) == list(pipeline_cases.ds(root).shuffle(40, seed=2).map(
        pipeline_cases.xs))


def test_a_view_with_a_projection_filters_on_columns_it_does_not_return(root: str) -> None:
    view = pipeline_cases.view(root)  # predicate on g
    pipe = view.pipeline(columns=["x"])
    rows = list(pipe)
    assert rows and all(set(r) == {"__key__", "x"} and r["x"] % 7 == 2 for r in rows)
    assert pipe.schema.names == ["__key__", "x"]


@pytest.mark.parametrize(("build", "error", "match"), [
    (lambda ds: ds.pipeline().filter("x = 3"), TypeError, r"filter\(\).*ds.where"),
    (lambda ds: ds.pipeline().map(5), TypeError, r"map\(\) takes a function"),
    (lambda ds: ds.pipeline().map_batches("f"), TypeError, r"map_batches\(\) takes"),
    (lambda ds: ds.shuffle(seed=None), TypeError, "seed must be an int"),
    (lambda ds: ds.shuffle(full=True, seed="a"), TypeError, "seed must be an int"),
    (lambda ds: ds.pipeline().shuffle(10, seed=1.5), TypeError, "seed must be an int"),
    (lambda ds: ds.shuffle(buffer=2.5), TypeError, "row count"),
    (lambda ds: ds.pipeline().map(len).shuffle(2.5), TypeError, "number of items"),
    (lambda ds: dl.mix([ds.pipeline(), ds.pipeline()], [1, 1], seed=None), TypeError, "seed"),
    (lambda ds: dl.mix([ds.pipeline(), ds.pipeline()], [1, 1], exact=True, window=0),
     ValueError, "window=0"),
    (lambda ds: dl.random_stream(None), TypeError, "seed must be an int"),
])
def test_bad_arguments_are_refused_when_the_pipeline_is_built(
        root: str, build: object, error: type[Exception], match: str) -> None:
    ds = pipeline_cases.ds(root)
    with pytest.raises(error, match=match):
        build(ds)  # type: ignore[operator]


def test_a_pyarrow_expression_still_filters(root: str) -> None:
    got = [r["x"] for r in pipeline_cases.ds(root).pipeline().filter(pc.field("x") >= 290)]
    assert got == list(range(290, 300))


def test_an_infeasible_plan_lists_only_the_fixes_that_apply(memory_root: str,
                                                             tmp_path: Path) -> None:
    repo = Repository.open(memory_root, cache_dir=str(tmp_path / "c"), cache_budget="unlimited")
    repo.commit("d", [(f"k{i:04d}", {"pad": np.random.default_rng(i).bytes(100)})
                      for i in range(600)], shard_size=20_000, progress=False)
    shard = max(s.bytes for s in repo.manifest("d").shards)
    small = Repository.open(memory_root, cache_dir=str(tmp_path / "s"),
                            cache_budget=str(int(shard * 1.5)))
    report = small.dataset("d").pipeline().batch(50).check(consumers=2)
    assert not report.feasible
    msg = report.message
    assert f"at least {format_bytes_up(report.resident_bytes)}" in msg  # enough, typed back
    assert "run fewer consumers on this machine (now 2" in msg
    assert "full shuffle" not in msg and "fewer sources" not in msg  # no shuffle, one source
    full = small.dataset("d").shuffle(full=True, seed=0).check(consumers=1).message
    assert "use a windowed shuffle" in full and "fewer consumers" not in full
