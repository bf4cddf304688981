"""A shuffled chunk of large values stays under ``CHUNK_BYTES``; order and resumption hold.

Chunks of 1,024 rows of 10 KB images were 10 MB takes: jemalloc gives a freed buffer of 8 MiB
or more straight back to the kernel, so every chunk faulted its pages in afresh (half the
windowed rate). Chunks are now cut by the bytes of their rows' large values, a function of
the data, so a restored position cuts the same chunks.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import Repository
from dload_arrow.pipeline.unit_rows import CHUNK_BYTES, UnitRows

ROWS = 1200


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("chunk_bytes")
    rng = np.random.default_rng(5)
    sizes = rng.integers(8_000, 32_000, ROWS)  # uneven rows: the cut follows each row's bytes
    table = pa.table({"x": np.arange(ROWS), "img": [os.urandom(int(n)) for n in sizes]})
    repo = Repository.open(tmp / "root", cache_dir=tmp / "cache")
    repo.commit("d", table, row_group_size=100, progress=False)
    return repo.dataset("d")


def _pipe(ds: Any, mode: str, views: bool = False) -> Any:
    if mode == "full":
        return ds.shuffle(full=True, seed=3, views=views)
    return ds.shuffle(600, seed=3, views=views)


@pytest.mark.parametrize("mode", ["windowed", "full"])
def test_a_chunk_copies_at_most_chunk_bytes_of_large_values(ds: Any, mode: str) -> None:
    chunks = list(_pipe(ds, mode).iter_chunks())
    sizes = [sum(len(v) for v in c.column("img").to_pylist()) for c in chunks]
    assert all(s <= CHUNK_BYTES for c, s in zip(chunks, sizes, strict=True) if len(c) > 1)
    assert max(sizes) > CHUNK_BYTES // 2  # cut near the limit, not row by row
    # the same rows in the same order as views (never copied, never cut)
    xs = [x for c in chunks for x in c.column("x").to_pylist()]
    viewed = [x for c in _pipe(ds, mode, views=True).iter_chunks()
              for x in c.column("x").to_pylist()]
    assert sorted(xs) == list(range(ROWS)) and xs == viewed


def _xs(batch: Any) -> list[int]:
    return [int(x) for x in batch["x"]]


@pytest.mark.parametrize("mode", ["windowed", "full"])
@pytest.mark.parametrize("stop", [1, 5, 17, 30])
def test_a_position_inside_a_cut_chunk_resumes_exactly(ds: Any, mode: str, stop: int) -> None:
    # batches of 37 over chunks of Arrow rows: a saved position falls inside a cut chunk
    full = [x for b in _pipe(ds, mode).batch(37) for x in _xs(b)]
    assert sorted(full) == list(range(ROWS))
    pipe = _pipe(ds, mode).batch(37)
    it = iter(pipe)
    seen = [x for _ in range(stop) for x in _xs(next(it))]
    state = pipe.state_dict()
    assert state["cursor"] is not None
    del it
    again = _pipe(ds, mode).batch(37)
    again.load_state_dict(state)
    assert seen + [x for b in again for x in _xs(b)] == full


def test_leading_rows_counts_the_rows_that_fit() -> None:
    batches = [pa.record_batch({"b": [b"a" * 1000] * 4}), pa.record_batch({"b": [b"z" * 3000] * 2})]
    rows = UnitRows(batches)
    assert rows.leading_rows(np.array([0, 4, 1, 5]), limit=4000) == 2  # 1000 + 3000
    assert rows.leading_rows(np.array([4, 0]), limit=10) == 1  # at least one
    assert rows.leading_rows(np.array([0, 1, 2]), limit=10**6) == 3
