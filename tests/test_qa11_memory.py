"""QA round "memory": an iteration left with `break`, its pipeline dropped, stops at once.

The pipeline held its live iteration and the iteration (through its dataset node) the
pipeline: a cycle, so a new pipeline each epoch left with `break` kept every old iteration's
threads, files, decoded windows and cache holds until the garbage collector ran (memory grew
to GBs; on S3 with a small budget the next epoch waited for room it held itself). The
pipeline now holds it weakly, and a dropped iteration is closed on a thread of its own
(``pipeline/closer.py``): its finalizer never waits.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from dload_arrow import Repository


@pytest.fixture
def ds(tmp_path: Path) -> Any:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    rows = 4000
    repo.commit("d", pa.table({"x": list(range(rows)), "b": [b"x" * 500] * rows}),
                row_group_size="64KB", progress=False)
    return repo.dataset("d")


def _workers() -> list[str]:
    """The read-ahead, decoding, window and fetch threads now running (not the closer)."""
    return sorted(t.name for t in threading.enumerate()
                  if t.name.startswith("dload-") and t.name != "dload-closer")


def _settled(before: list[str]) -> list[str]:
    """The worker threads, once they are back to ``before`` (or after 10 s)."""
    deadline = time.monotonic() + 10
    while (now := _workers()) != before and time.monotonic() < deadline:
        time.sleep(0.05)
    return now


def _pipe(ds: Any, mode: str, seed: int) -> Any:
    if mode == "full":
        return ds.shuffle(full=True, seed=seed)
    if mode == "windowed":
        return ds.shuffle(500, seed=seed)
    if mode == "batched":
        return ds.shuffle(500, seed=seed).map(lambda r: r).batch(7)
    return ds.pipeline()  # sequential


@pytest.mark.parametrize("mode", ["windowed", "full", "batched", "sequential"])
def test_a_pipeline_dropped_after_break_stops_without_the_garbage_collector(
        ds: Any, mode: str) -> None:
    before = _workers()
    gc.disable()
    try:
        for epoch in range(5):
            pipe = _pipe(ds, mode, epoch)
            for step, _ in enumerate(pipe):
                if step == 10:
                    break
            del pipe
        assert _settled(before) == before
    finally:
        gc.enable()


def test_an_iterator_dropped_while_its_pipeline_lives_stops_too(ds: Any) -> None:
    before = _workers()
    pipe = ds.shuffle(500, seed=3)
    gc.disable()
    try:
        it = iter(pipe)
        next(it)
        assert _workers() != before  # it reads ahead
        del it
        assert _settled(before) == before
        assert pipe.state_dict()["cursor"] is not None  # its position stays
    finally:
        gc.enable()


def test_the_position_after_break_survives_the_loops_iterator(ds: Any) -> None:
    pipe = ds.shuffle(500, seed=1)
    seen = []
    for step, item in enumerate(pipe):
        seen.append(item["x"])
        if step == 9:
            break  # the for-loop's iterator is dropped here
    state = pipe.state_dict()
    again = ds.shuffle(500, seed=1)
    again.load_state_dict(state)
    rest = [item["x"] for item in again]
    full = [item["x"] for item in ds.shuffle(500, seed=1)]
    assert seen + rest == full


def test_an_iteration_that_failed_to_start_leaves_no_error_in_its_finalizer(ds: Any) -> None:
    pipe = ds.shuffle(500, seed=1)
    pipe.load_state_dict({"epoch": 0, "cursor": {"bogus": 1}}, strict=False)
    caught: list[Any] = []
    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    try:
        with pytest.raises(Exception, match="does not fit this pipeline"):
            iter(pipe)
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert caught == []


def test_an_iteration_superseded_by_load_state_dict_leaves_the_position_alone(
        ds: Any) -> None:
    pipe = ds.shuffle(500, seed=1)
    old = iter(pipe)
    for _ in range(10):
        next(old)
    pipe.load_state_dict(pipe.state_dict())  # resume here; the caller still holds `old`
    assert sum(1 for _ in pipe) == 4000 - 10
    del old  # dropped after the epoch was finished by the newer iteration
    gc.collect()
    assert pipe.state_dict()["epoch"] == 1 and pipe.state_dict()["cursor"] is None
    other = ds.shuffle(500, seed=1)
    first = iter(other)
    next(first)
    other.set_epoch(3)
    del first
    assert other.state_dict()["epoch"] == 3 and other.state_dict()["cursor"] is None


def test_a_dropped_iteration_runs_no_source_code_in_its_finalizer() -> None:
    # A source's state_dict() is the user's code and may take a lock; a collection that
    # runs while the user holds that lock must not call it (it deadlocked).
    from dload_arrow.pipeline import from_iterable

    lock = threading.Lock()
    calls: list[int] = []

    class Counter:
        def __init__(self) -> None:
            self.i = 0

        def __iter__(self) -> Counter:
            return self

        def __next__(self) -> int:
            self.i += 1
            return self.i

        def state_dict(self) -> dict[str, int]:
            calls.append(self.i)
            with lock:
                return {"i": self.i}

        def load_state_dict(self, state: dict[str, int]) -> None:
            self.i = state["i"]

    pipe = from_iterable(lambda: Counter())
    it = iter(pipe)
    next(it)
    next(it)
    cycle: list[Any] = [it]
    cycle.append(cycle)  # reachable only from garbage, as from a kept traceback
    del it, cycle
    calls.clear()
    done = threading.Event()

    def collect() -> None:
        with lock:  # the user's code holds its lock when the collector runs
            gc.collect()
        done.set()

    threading.Thread(target=collect, daemon=True).start()
    assert done.wait(30), "the finalizer waited for the source's lock"
    assert calls == []
    resumed = from_iterable(lambda: Counter())
    resumed.load_state_dict(pipe.state_dict())
    assert next(iter(resumed)) == 3  # the position of the dropped iteration was kept
