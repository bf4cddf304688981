"""QA round "memory": an iteration left with `break`, its pipeline dropped, stops at once.

The pipeline held its live iteration and the iteration (through its dataset node) the
pipeline: a cycle, so a new pipeline each epoch left with `break` kept every old iteration's
threads, files, decoded windows and cache holds until the garbage collector ran (memory grew
to GBs; on S3 with a small budget the next epoch waited for room it held itself).
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from dload_arrow import Repository


@pytest.fixture
def ds(tmp_path: Path) -> object:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    rows = 4000
    repo.commit("d", pa.table({"x": list(range(rows)), "b": [b"x" * 500] * rows}),
                row_group_size="64KB", progress=False)
    return repo.dataset("d")


@pytest.mark.parametrize("mode", ["windowed", "full"])
def test_a_pipeline_dropped_after_break_stops_without_the_garbage_collector(
        ds: object, mode: str) -> None:
    before = threading.active_count()
    gc.disable()
    try:
        for epoch in range(5):
            pipe = (ds.shuffle(full=True, seed=epoch) if mode == "full"  # type: ignore[attr-defined]
                    else ds.shuffle(500, seed=epoch))  # type: ignore[attr-defined]
            for step, _ in enumerate(pipe):
                if step == 10:
                    break
            del pipe
        assert threading.active_count() <= before + 1  # (a thread may be ending right now)
    finally:
        gc.enable()


def test_the_position_after_break_survives_the_loops_iterator(ds: object) -> None:
    pipe = ds.shuffle(500, seed=1)  # type: ignore[attr-defined]
    seen = []
    for step, item in enumerate(pipe):
        seen.append(item["x"])
        if step == 9:
            break  # the for-loop's iterator is dropped here
    state = pipe.state_dict()
    again = ds.shuffle(500, seed=1)  # type: ignore[attr-defined]
    again.load_state_dict(state)
    rest = [item["x"] for item in again]
    full = [item["x"] for item in ds.shuffle(500, seed=1)]  # type: ignore[attr-defined]
    assert seen + rest == full
