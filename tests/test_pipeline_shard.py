"""shard() partitions a stream exactly, whatever the consumer count; skip() resumes anywhere.

Sharding is by output position, so the global order never depends on the number of
consumers; pushed down into a dataset source it reads only the units a consumer needs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pipeline_cases
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipeline_harness import normalize

import dload_arrow as dl
from dload_arrow import Repository
from dload_arrow.pipeline.dataset import DatasetPipe
from dload_arrow.pipeline.shard import ShardPipe
from dload_arrow.plan.orders import own_count, own_position


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("shard")
    pipeline_cases.make_datasets(str(path))
    return str(path)


def nums(root: str, order: str) -> dl.Pipeline:
    ds = pipeline_cases.ds(root)
    if order == "windowed":
        return ds.shuffle(40, seed=7)
    if order == "full":
        return ds.shuffle(full=True, seed=7)
    return ds.pipeline()


def own(stream: list[object], index: int, count: int, block: int) -> list[object]:
    return [x for p, x in enumerate(stream) if (p // block) % count == index]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 5), block=st.integers(1, 9),
       order=st.sampled_from(["sequential", "windowed", "full"]),
       shape=st.sampled_from(["rows", "batch", "filter"]))
def test_shards_partition_the_stream_exactly(
    root: str, count: int, block: int, order: str, shape: str
) -> None:
    def make() -> dl.Pipeline:
        p = nums(root, order).map(pipeline_cases.xs)
        if shape == "batch":
            p = p.batch(4).map(list)
        elif shape == "filter":
            p = p.filter(lambda x: x % 3 != 0)
        return p

    full = normalize(list(make()))
    parts = [normalize(list(make().shard(i, count, block))) for i in range(count)]
    for i, part in enumerate(parts):
        assert part == own(full, i, count, block)
    assert sorted(repr(x) for part in parts for x in part) == sorted(map(repr, full))


def test_shard_is_pushed_below_map_and_batch_into_the_source(root: str) -> None:
    p = nums(root, "windowed").map(pipeline_cases.xs).batch(4).shard(1, 3, block=2)
    node = p
    while not isinstance(node, DatasetPipe):
        assert not isinstance(node, ShardPipe)
        node = node._children[0]
    assert node.shard_spec == (1, 3, 8)


def test_shard_stays_above_a_filter_and_a_predicate_view(root: str) -> None:
    p = nums(root, "sequential").filter(lambda r: True).shard(0, 2)
    assert isinstance(p, ShardPipe)
    view = pipeline_cases.view(root).pipeline().shard(0, 2)
    assert isinstance(view, ShardPipe)


@settings(max_examples=50, deadline=None)
@given(index=st.integers(0, 6), count=st.integers(1, 7), block=st.integers(1, 9),
       p=st.integers(0, 500))
def test_own_position_arithmetic_inverts(index: int, count: int, block: int, p: int) -> None:
    index %= count
    k = own_count(p, index, count, block)
    assert k == sum(1 for q in range(p) if (q // block) % count == index)
    q = own_position(k, index, count, block)
    assert q >= p and (q // block) % count == index
    # scalars (plain arithmetic), numpy scalars and arrays (numpy) agree
    ps, ks = np.arange(p + 1), np.arange(k + 1)
    assert own_count(ps, index, count, block).tolist() == [
        own_count(int(x), index, count, block) for x in ps]
    assert own_position(ks, index, count, block).tolist() == [
        own_position(int(x), index, count, block) for x in ks]
    assert own_count(np.int64(p), index, count, block) == k
    assert own_position(np.int64(k), index, count, block) == q


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, 320), count=st.integers(1, 4),
       order=st.sampled_from(["sequential", "windowed", "full"]))
def test_skip_then_shard_resumes_a_global_position_at_any_consumer_count(
    root: str, start: int, count: int, order: str
) -> None:
    """Checkpointed at global position P with one layout, resumed with another."""
    full = list(nums(root, order).map(pipeline_cases.xs))
    parts = [list(nums(root, order).map(pipeline_cases.xs).skip(start).shard(i, count))
             for i in range(count)]
    merged = [None] * max(0, len(full) - start)
    for i, part in enumerate(parts):
        merged[i::count] = part
    assert merged == full[start:]


def test_sharded_source_downloads_only_its_shards(
    s3_root: str, s3_server: object, tmp_path: Path
) -> None:
    repo = Repository.open(s3_root, cache_dir=str(tmp_path / "c0"), cache_budget="unlimited")
    repo.commit("many", [(f"k{i:04d}", {"x": i}) for i in range(400)], shard_size=300,
                row_group_size=300, progress=False)
    m = repo.dataset("many").manifest
    rows = [s.rows for s in m.shards]
    assert len(rows) >= 4 and len(set(rows[:-1])) == 1, rows
    per = rows[0]
    s3_server.clear()  # type: ignore[attr-defined]
    repo0 = Repository.open(s3_root, cache_dir=str(tmp_path / "c1"), cache_budget="unlimited")
    got = [r["x"] for r in repo0.dataset("many").pipeline().shard(0, 2, block=per)]
    assert got == [x for x in range(400) if (x // per) % 2 == 0]
    own_shards = len(range(0, len(rows), 2))
    fetched = s3_server.count("GET", contains="shards/")  # type: ignore[attr-defined]
    assert 0 < fetched <= own_shards * 2, (fetched, own_shards)
    assert fetched < len(rows)


def test_shard_rejects_bad_arguments() -> None:
    p = dl.from_iterable([1, 2, 3])
    with pytest.raises(ValueError, match="index"):
        p.shard(3, 3)
    with pytest.raises(ValueError, match="block"):
        p.shard(0, 2, block=0)


@pytest.fixture(scope="module")
def blobs(root: str) -> dl.Dataset:
    """Rows whose data outweighs their Python objects: shuffled per item, they go as items;
    shuffled in Arrow, each chunk takes its rows from the window (rows of over 1 KiB)."""
    repo = pipeline_cases.open_repo(root)
    repo.commit("blobs", [(f"b{i:04d}", {"x": i, "b": bytes([i % 251]) * 1100})
                          for i in range(300)],
                row_group_size=40, shard_size=90_000, progress=False)
    return repo.dataset("blobs")


def test_large_rows_are_shuffled_as_items_and_small_rows_in_arrow(
        root: str, blobs: dl.Dataset) -> None:
    from dload_arrow.pipeline.window_layout import items_pay_off, takes_per_chunk

    small = list(pipeline_cases.ds(root).batches())
    assert not items_pay_off(small[0])  # a dict per row costs more than the row
    large = list(blobs.batches())
    assert items_pay_off(large[0])
    # in Arrow, a window of small rows is gathered whole, one of large rows chunk by chunk
    assert not takes_per_chunk(small[:3])
    assert takes_per_chunk(large[:3])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(1, 4), block=st.integers(1, 7), start=st.integers(0, 60),
       order=st.sampled_from(["windowed", "full"]), seed=st.integers(0, 3),
       data=st.sampled_from(["nums", "blobs"]))
def test_item_and_arrow_reads_of_a_shuffle_agree(
    root: str, blobs: dl.Dataset, count: int, block: int, start: int, order: str, seed: int,
    data: str,
) -> None:
    # Iterated per item, a shuffled source of large rows gathers them as Python objects;
    # iterated in chunks it gathers them in Arrow. Both must be the same rows in the same
    # order, for every shard and every start position.
    from dload_arrow.read.samples import batch_to_samples

    ds = pipeline_cases.ds(root) if data == "nums" else blobs
    base = ds.shuffle(40, seed=seed) if order == "windowed" else ds.shuffle(full=True, seed=seed)
    index = start % count
    view = base.shard(index, count, block).skip(start)
    view.set_epoch(0)
    items = list(view)
    view.set_epoch(0)
    chunks = list(view.iter_chunks())
    assert all(not isinstance(c, list) for c in chunks)  # Arrow all the way
    arrow = [row for c in chunks for row in batch_to_samples(c)]
    assert normalize(items) == normalize(arrow)
    assert len(items) == max(0, own_count(base._length(), index, count, block) - start)


@pytest.mark.parametrize("count", [1, 3])
def test_a_predicate_view_of_large_rows_keeps_the_shuffle_order(
        blobs: dl.Dataset, count: int) -> None:
    # Large rows in Arrow: each chunk takes its rows from the window, then the predicate
    # filters them. The view's order is the unfiltered order with the other rows left out.
    import pyarrow.compute as pc

    from dload_arrow.read.samples import batch_to_samples
    from dload_arrow.repository.dataset import Dataset

    units = [(s.index, rg) for s in blobs.manifest.shards for rg in range(len(s.rg_rows))]
    view = Dataset(blobs.repo, blobs.manifest, units=units,
                   predicate=(pc.field("x") >= 50) & (pc.field("x") < 250))
    kept = [r["x"] for r in blobs.shuffle(40, seed=3) if 50 <= r["x"] < 250]
    assert kept != sorted(kept)
    for i in range(count):  # a view is sharded after its filter (by filtered position)
        got = [r["x"] for c in view.shuffle(40, seed=3).shard(i, count, 4).iter_chunks()
               for r in batch_to_samples(c)]
        assert got == own(kept, i, count, 4)


@pytest.mark.parametrize("count", [1, 3])
def test_a_sharded_consumer_holds_only_its_own_rows_of_a_window(
        blobs: dl.Dataset, count: int) -> None:
    # Windows of large rows: one consumer keeps the window and takes per chunk; each of
    # several consumers (DataLoader workers) keeps only its own rows, not the whole window.
    from dload_arrow.pipeline.window_node import DatasetNode

    node = blobs.shuffle(120, seed=1).shard(0, count, 4)._build(0)
    assert isinstance(node, DatasetNode)
    node.reset(None)
    node.next()
    win = node._win
    assert win is not None and win.batch is not None
    starts = node.plan.window_starts
    rows = int(starts[1] - starts[0])  # the first window, cut on whole row groups
    own = int(own_count(starts[1], 0, count, 4) - own_count(starts[0], 0, count, 4))
    if count == 1:
        assert not win.ordered and win.batch.num_rows == rows  # taken from per chunk
    else:
        assert win.ordered and win.batch.num_rows == own < rows
    node.close()

