"""The decoding threads: the visit's next units decode ahead, a second thread joins only while
the consumer starves, the order is kept, decoded units stay bounded, all stop with the read."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from dload_arrow import Repository
from dload_arrow.read.reader import DECODE_AHEAD, all_units, iter_units
from dload_arrow.store.readahead import Starving


def test_starving_is_the_recent_share_of_time_spent_waiting() -> None:
    s = Starving()
    assert not s
    s.took(0.0)
    for _ in range(10):  # each take waited for almost all of the time since the last one
        t0 = time.perf_counter()
        time.sleep(0.01)
        s.took(time.perf_counter() - t0)
    assert s
    for _ in range(20):  # the item was ready every time: the consumer was the slow one
        time.sleep(0.002)
        s.took(0.0)
    assert not s


@pytest.fixture
def tokens(repo: Repository) -> Any:
    """Sequences in row groups of about 20 rows, 4 shards: decoding them is the slow part."""
    rng = np.random.default_rng(0)
    rows = [(f"k{i:05d}", {"tokens": rng.integers(0, 50_000, 512, dtype=np.int32)})
            for i in range(800)]
    repo.commit("tok", rows, shard_size=400_000, row_group_size=40_000, progress=False)
    return repo.dataset("tok")


@pytest.fixture
def decoded_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The thread that decoded each row group (pyarrow's reader, wrapped: no I/O is faked)."""
    names: list[str] = []
    real = pq.ParquetFile.read_row_group

    def read_row_group(self: pq.ParquetFile, i: int, *args: Any, **kwargs: Any) -> Any:
        names.append(threading.current_thread().name)
        time.sleep(0.002)  # a slow column: the consumer below keeps finding nothing ready
        return real(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", read_row_group)
    return names


def test_a_starving_consumer_gets_a_second_decoder_and_the_same_stream(
        tokens: Any, decoded_on: list[str]) -> None:
    units = all_units(tokens.manifest)
    assert 30 <= len(units) <= 60 and len(tokens.manifest.shards) >= 3
    got = [b.column("__key__").to_pylist() for b in iter_units(tokens.context, tokens.manifest,
                                                                  units)]
    assert [k for b in got for k in b] == [f"k{i:05d}" for i in range(800)]
    assert len(got) == len(units) == len(decoded_on)
    assert "dload-decode1" in {n.split("_")[0] for n in decoded_on}  # the second joined in
    assert not any(t.name.startswith("dload-decode") for t in threading.enumerate())


def test_a_visit_decodes_ahead_on_the_decoding_threads(
        tokens: Any, decoded_on: list[str]) -> None:
    """The reader decodes the first unit of each shard visit; the rest of the visit decodes on
    the decoding threads, ahead, while the reader hands batches to the consumer."""
    units = all_units(tokens.manifest)
    heads = {j for j in range(len(units)) if j == 0 or units[j][0] != units[j - 1][0]}
    for _ in iter_units(tokens.context, tokens.manifest, units):
        time.sleep(0.001)
    assert sorted(decoded_on).count("dload-read-ahead") == len(heads) == len(
        tokens.manifest.shards)
    assert sum(n.startswith("dload-decode") for n in decoded_on) == len(units) - len(heads)


def test_a_busy_consumer_keeps_one_decoding_thread(tokens: Any, decoded_on: list[str]) -> None:
    it: Iterator[Any] = iter_units(tokens.context, tokens.manifest, all_units(tokens.manifest))
    for _ in it:
        time.sleep(0.02)  # the consumer is the bottleneck: the queue is always full
    assert decoded_on and not any(n.startswith("dload-decode1") for n in decoded_on[6:])


def test_decoded_units_stay_bounded_ahead_of_a_slow_consumer(
        tokens: Any, decoded_on: list[str]) -> None:
    """At most DECODE_AHEAD units on the decoding threads, DECODE_AHEAD in the queue and one
    with the reader: memory is bounded by units, whatever the consumer's pace."""
    most = 0
    units = iter_units(tokens.context, tokens.manifest, all_units(tokens.manifest))
    for taken, _ in enumerate(units, 1):
        time.sleep(0.01)
        most = max(most, len(decoded_on) - taken)
    assert 2 <= most <= 2 * DECODE_AHEAD + 1


def test_closing_mid_visit_waits_for_the_second_decoder(
        tokens: Any, decoded_on: list[str]) -> None:
    it = iter_units(tokens.context, tokens.manifest, all_units(tokens.manifest))
    for _ in range(7):
        next(it)
    it.close()  # type: ignore[attr-defined]
    assert not any(t.name.startswith("dload-decode") for t in threading.enumerate())


def test_a_predicate_outside_the_projection_keeps_both_decoders_exact(
        repo: Repository, decoded_on: list[str]) -> None:
    """The predicate's column is not projected: the decoders switch to reading every column
    (the switch may race between them) and the filtered stream stays exact and in order."""
    import pyarrow.compute as pc

    rng = np.random.default_rng(1)
    rows = [(f"k{i:05d}", {"tokens": rng.integers(0, 50_000, 512, dtype=np.int32), "n": i})
            for i in range(800)]
    repo.commit("tokn", rows, shard_size=400_000, row_group_size=40_000, progress=False)
    ds = repo.dataset("tokn")
    units = all_units(ds.manifest)
    it = iter_units(ds.context, ds.manifest, units, columns=["tokens"],
                    predicate=pc.equal(pc.bit_wise_and(pc.field("n"), 3), 0))
    got = [k for b in it for k in b.column("__key__").to_pylist()]
    assert got == [f"k{i:05d}" for i in range(0, 800, 4)]
    assert any(n.startswith("dload-decode") for n in decoded_on)
