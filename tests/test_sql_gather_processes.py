"""Two processes sharing one cache each run a query over a dataset that fits the budget alone
but not beside the other's: each used to hold half its shards and wait for room the other
held, and both failed after the 600 s wait. One query of the machine gathers at a time now."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from typing import Any

import numpy as np
import pytest

from dload_arrow import Repository


def _query(root: str, cache: str, name: str, out: Any) -> None:
    try:
        repo = Repository.open(root, cache_dir=cache, cache_budget="6MB")
        got = repo.sql(f"SELECT count(*) AS n FROM samples('{name}')")
        out.put((name, got.column("n")[0].as_py()))
    except Exception as e:  # reported, not lost in the child
        out.put((name, f"{type(e).__name__}: {e}"))


def _rows(seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return ((f"k{i:06d}", {"i": i, "blob": rng.bytes(4096)}) for i in range(1000))


@pytest.mark.timeout(240)
def test_two_processes_querying_datasets_that_fit_only_one_at_a_time_both_finish(
        s3_root: str, tmp_path: Any) -> None:
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "w"))
    for name, seed in (("d", 0), ("e", 1)):  # 5.2 MB each, in 256 KB shards
        writer.commit(name, _rows(seed), shard_size="256KiB", row_group_size="64KiB",
                      progress=False)
    spawn = mp.get_context("spawn")
    out = spawn.Queue()
    cache = str(tmp_path / "cache")
    procs = [spawn.Process(target=_query, args=(s3_root, cache, n, out)) for n in ("d", "e")]
    for p in procs:
        p.start()
    got = {}
    try:
        for _ in procs:
            name, n = out.get(timeout=120)
            got[name] = n
    except queue.Empty:
        pass
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(10)
    assert got == {"d": 1000, "e": 1000}
    assert not [f for _, _, fs in os.walk(cache) for f in fs if ".tmp-" in f]
