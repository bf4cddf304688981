"""Costs that grew faster than the data (QA cliffs56).

- a wide row (5,000 int64 columns) under the default 2 MiB row group made row groups of ~50
  rows, and reading pays per column chunk: commit and read grew with the square of the
  columns. The default row group now holds at least 16 KiB a column (only past 128 columns);
- ``versions``/``log`` read every ref-log entry one after another (an S3 request each);
- 50 lists in lists were written, then refused by Parquet's reader with an OSError (the CLI
  called it a bug): refused before any write, naming the depth.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3server import S3Server

from dload_arrow import Repository, SchemaError


def _row_groups(repo: Repository, name: str) -> list[int]:
    m = repo.manifest(name)
    return [len(s.rg_rows) for s in m.shards]


def test_a_wide_row_gets_larger_default_row_groups(repo: Repository) -> None:
    rows = 400
    wide = pa.table({"__key__": [f"k{i:04d}" for i in range(rows)],
                     **{f"c{j:04d}": np.arange(rows, dtype=np.int64) + j for j in range(1000)}})
    repo.commit("wide", wide, progress=False)  # 3.2 MB: 2 row groups of 8 KB a column
    assert _row_groups(repo, "wide") == [1]  # the floor: 1000 x 16 KiB > 3.2 MB
    repo.commit("cut", wide, row_group_size="1MiB", progress=False)  # asked for: kept
    assert sum(_row_groups(repo, "cut")) >= 3
    assert repo.dataset("wide").to_arrow().equals(repo.dataset("cut").to_arrow())
    narrow = pa.table({"__key__": [f"k{i:05d}" for i in range(40_000)],
                       "x": np.arange(40_000, dtype=np.int64),
                       "b": [bytes([i % 251]) * 100 for i in range(40_000)]})
    repo.commit("narrow", narrow, progress=False)  # 4.6 MB of 2 columns: as before
    assert sum(_row_groups(repo, "narrow")) >= 2
    v = repo.append("wide", wide.set_column(0, "__key__", pa.array(
        [f"z{i:04d}" for i in range(rows)])), progress=False)  # an append cuts as its parent
    assert v.num_rows == 2 * rows and _row_groups(repo, "wide") == [1, 1]
    path = Path(repo.storage.root) / "shards"  # type: ignore[attr-defined]
    assert any(pq.ParquetFile(p).metadata.num_row_groups == 1 for p in path.rglob("*.parquet"))


def test_versions_read_the_log_side_by_side(s3_repo: Repository, s3_server: S3Server) -> None:
    for i in range(20):
        s3_repo.commit("d", [("k", {"x": i})], progress=False)
    s3_server.clear()
    release = threading.Event()
    s3_server.held = ("/log/", release)  # every log entry's body waits for the release
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(s3_repo.versions("d")))
    t.start()
    try:
        deadline = time.monotonic() + 20
        while s3_server.count("GET", "/log/") < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting = s3_server.count("GET", "/log/")  # one after another: never more than 1
    finally:
        release.set()
        t.join()
        s3_server.held = None
    assert waiting >= 4
    (got,) = out
    assert len(got) == 20 and s3_server.count("GET", "/log/") == 20  # type: ignore[arg-type]


def test_a_schema_deeper_than_parquet_reads_is_refused_before_writing(repo: Repository) -> None:
    def nested(depth: int) -> object:
        v: object = 1
        for _ in range(depth):
            v = [v]
        return v

    repo.commit("ok", [("a", {"x": nested(49)})], progress=False)
    assert repo.dataset("ok").to_arrow().num_rows == 1
    with pytest.raises(SchemaError, match=r"column 'x' nests 101 levels deep .* past the 99"):
        repo.commit("deep", [("a", {"x": nested(50)})], progress=False)
    assert not list(Path(repo.storage.root).glob("datasets/deep"))  # type: ignore[attr-defined]
