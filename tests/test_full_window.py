"""The full shuffle's window: units decoded in the order the epoch first needs them, chunks
handed out as soon as their units are in, small first chunks."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dload_arrow import Repository
from dload_arrow.pipeline.full_window import (
    FIRST_CHUNK,
    FIRST_ROUND,
    FullRows,
    chunk_cap,
    first_need_order,
)
from dload_arrow.pipeline.row_bytes import row_bytes
from dload_arrow.plan.orders import SamplePlan


def _first_appearances(units: list[int]) -> list[int]:
    seen: dict[int, None] = {}
    for u in units:
        seen.setdefault(u, None)
    return list(seen)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.integers(0, 9), min_size=1, max_size=40), seed=st.integers(0, 99),
       start=st.integers(0, 50), data=st.data())
def test_units_come_in_rounds_of_first_need(rows: list[int], seed: int, start: int,
                                            data: st.DataObject) -> None:
    """Round r (FIRST_ROUND << r units) holds the same units as the next stretch of the
    exact first-need order, in storage order; units no read position needs come last."""
    plan = SamplePlan.build(np.zeros(len(rows), np.int64), np.asarray(rows), "full",
                            seed=seed, epoch=1)
    start = min(start, plan.num_rows)
    needed = np.asarray(sorted(data.draw(st.sets(st.integers(0, len(rows) - 1), min_size=1))),
                        np.int64)
    count = plan.num_rows - start
    got = first_need_order(plan, lambda a, b: np.arange(start + a, start + b), count, needed)
    assert sorted(got.tolist()) == needed.tolist()
    u, _ = plan.locate(np.arange(start, plan.num_rows))
    exact = [x for x in _first_appearances(u.tolist()) if x in set(needed.tolist())]
    exact += [x for x in needed.tolist() if x not in exact]  # never read from here: last
    at, size = 0, FIRST_ROUND
    while at < len(exact):
        part = got[at:at + size].tolist()
        assert part == sorted(exact[at:at + size])
        at, size = at + size, 2 * size


def test_chunks_ramp_up_from_the_first_and_depend_on_the_position_only() -> None:
    sizes, done = [], 0
    while done < 5000:
        sizes.append(chunk_cap(done, 1024))
        done += sizes[-1]
    assert sizes[:4] == [FIRST_CHUNK, FIRST_CHUNK, 2 * FIRST_CHUNK, 4 * FIRST_CHUNK]
    assert max(sizes) == 1024 and sizes[-1] == 1024
    assert all(b in (a, 2 * a, 1024) for a, b in itertools.pairwise(sizes))


def _unit(u: int, n: int) -> pa.RecordBatch:
    return pa.record_batch({"__key__": [f"{u}-{i}" for i in range(n)],
                            "v": pa.array([u * 100 + i for i in range(n)], pa.int64())})


@pytest.mark.parametrize("items", [False, True], ids=["arrow", "items"])
def test_rows_wait_only_for_their_own_units(items: bool) -> None:
    """A consumer gets the rows of arrived units while others are still on their way; it
    waits for a missing one and is woken when it arrives."""
    full = FullRows(units=6, expected=4)
    at = 0

    def add(u: int) -> None:
        nonlocal at
        batch = _unit(u, 3)
        full.add(u, at, None if items else batch, batch.to_pylist() if items else None,
                 row_bytes(batch))
        at += 3

    add(4)
    add(1)
    held = full.rows(np.asarray([4, 1, 4]))
    offs = full.offset[np.asarray([1, 4])] + np.asarray([2, 0])
    got = [held[i] for i in offs] if items else held.take(offs).to_pylist()  # type: ignore
    assert [r["v"] for r in got] == [102, 400]
    out: list[object] = []
    waiter = threading.Thread(target=lambda: out.append(full.rows(np.asarray([5, 1]))))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive()  # unit 5 is not in yet
    add(0)
    time.sleep(0.1)
    assert waiter.is_alive()  # still not unit 5
    add(5)
    waiter.join(5)
    assert not waiter.is_alive() and out
    offs = full.offset[np.asarray([5, 0])] + np.asarray([1, 1])
    held = out[0]
    got = [held[i] for i in offs] if items else held.take(offs).to_pylist()  # type: ignore
    assert [r["v"] for r in got] == [501, 1]
    full.finish()


def test_an_error_while_filling_reaches_the_waiting_consumer() -> None:
    full = FullRows(units=3, expected=3)
    full.add(0, 0, _unit(0, 2), None, row_bytes(_unit(0, 2)))
    threading.Timer(0.1, lambda: full.finish(OSError("disk gone"))).start()
    with pytest.raises(OSError, match="disk gone"):
        full.rows(np.asarray([0, 2]))
    with pytest.raises(OSError, match="disk gone"):
        full.rows(np.asarray([1]))


def test_first_chunk_of_a_full_shuffle_is_small_and_rows_are_exact(tmp_path: object) -> None:
    """Every row once per epoch, the same order as a fresh read, the first chunk small."""
    repo = Repository.open(str(tmp_path))
    repo.commit("d", [(f"k{i:04d}", {"x": i, "blob": bytes([i % 256]) * 1500})
                      for i in range(600)], row_group_size=20, progress=False)
    ds = repo.dataset("d")
    chunks = list(ds.shuffle(full=True, seed=3).iter_chunks())
    assert chunks[0].num_rows == FIRST_CHUNK
    xs = [x for c in chunks for x in c.column("x").to_pylist()]
    assert sorted(xs) == list(range(600)) and xs != list(range(600))
    items = [s["x"] for s in ds.shuffle(full=True, seed=3)]
    assert items == xs


def test_full_shuffle_from_s3_gets_each_shard_once(s3_repo: Repository, s3_server: object
                                                   ) -> None:
    """Units read in rounds revisit shards; each is downloaded once an epoch all the same."""
    rng = np.random.default_rng(0)
    s3_repo.commit("d", [(f"k{i:04d}", {"x": i, "blob": rng.bytes(900)}) for i in range(400)],
                   row_group_size=8_000, shard_size=60_000, progress=False)
    ds = s3_repo.dataset("d")
    shards = len(ds.manifest.shards)
    assert shards >= 4
    s3_server.clear()  # type: ignore[attr-defined]
    xs = [s["x"] for s in ds.shuffle(full=True, seed=5)]
    assert sorted(xs) == list(range(400))
    gets = s3_server.count("GET", "shards/", ranged=False)  # type: ignore[attr-defined]
    assert gets == shards


def test_the_first_item_of_a_cold_full_shuffle_waits_for_its_own_shard_only(
        s3_root: str, cache_dir: str, s3_server: Any) -> None:
    # The first chunk is one row and its unit is decoded first: on a cold cache the first item
    # needs the download of that unit's shard, not of every shard (a first chunk of 16 rows
    # drew units from all of them).
    rng = np.random.default_rng(1)
    probe = Repository.open(s3_root, cache_dir=cache_dir + "-probe", cache_budget="unlimited")
    probe.commit("d", [(f"k{i:04d}", {"x": i, "blob": rng.bytes(900)}) for i in range(400)],
                 row_group_size=8_000, shard_size=60_000, progress=False)
    m = probe.manifest("d")
    assert len(m.shards) >= 4
    first = next(iter(probe.dataset("d").shuffle(full=True, seed=5)))["__key__"]
    own = next(s for s in m.shards if s.key_min <= first <= s.key_max)
    cold = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    epoch = iter(cold.dataset("d").shuffle(full=True, seed=5))
    got: list[Any] = []
    release = threading.Event()
    s3_server.hold_others = (own.digest, release)
    reading = threading.Thread(target=lambda: got.append(next(epoch)))
    try:
        reading.start()
        reading.join(20)
        assert got, "the first item waited for shards other than its own"
        assert got[0]["__key__"] == first
    finally:
        release.set()
        s3_server.hold_others = None
        reading.join(60)
    rest = [s["__key__"] for s in epoch]
    assert sorted([first, *rest]) == [f"k{i:04d}" for i in range(400)]
