"""QA sharedcache63: on a small disk, shards another process's reader holds are room once it
lets go: a reader waits for them, as under the budget, instead of being refused at once
(this process's own holds stay no room: it would wait for itself, review 42)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from small_disk import SmallDisk

from dload_arrow import Repository

HOLDER = """
import sys, time
from dload_arrow import Repository
repo = Repository.open(sys.argv[1], cache_dir=sys.argv[2], cache_budget="250KB")
it = iter(repo.dataset("b").batches())  # a window of one shard: held, alone in the cache
next(it)
print("holding", flush=True)
time.sleep(float(sys.argv[3]))
print(sum(b.num_rows for b in it), flush=True)
"""


def _commit_two(s3_root: str, tmp_path: Path) -> None:
    writer = Repository.open(s3_root, cache_dir=tmp_path / "w", cache_budget="unlimited")
    for name in ("a", "b"):
        writer.commit(name, pa.table({"k": list(range(400)),
                                      "b": [os.urandom(1000) for _ in range(400)]}),
                      shard_size="100KB", row_group_size="20KB", progress=False)


def test_a_reader_waits_for_shards_another_process_holds(
        s3_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLOAD_CACHE_WAIT", "60")
    _commit_two(s3_root, tmp_path)
    cache = str(tmp_path / "c")
    os.makedirs(cache)
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(script), s3_root, cache, "3"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 450_000))
        reader = Repository.open(s3_root, cache_dir=cache, cache_budget="unlimited")
        plan = reader.dataset("a").plan(full_shuffle=True)
        assert plan.resident_bytes - plan.cached_bytes > plan.free_disk_bytes  # short now
        assert plan.feasible, plan.reasons  # (the held shard: room later)
        t0 = time.monotonic()
        got = reader.dataset("a").to_arrow()
        assert got.num_rows == 400 and time.monotonic() - t0 < 50
    finally:
        holder.wait(timeout=60)


def _child_refused(s3_root: str, cache: str, budget: str) -> bool:
    """Whether a forked child is refused a full shuffle of ``a`` at once (no wait)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        import signal

        signal.alarm(30)
        child = Repository.open(s3_root, cache_dir=cache, cache_budget=budget)
        os._exit(0 if not child.dataset("a").plan(full_shuffle=True).feasible else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("budget", ["unlimited", "700KB"])
def test_a_forked_child_does_not_wait_for_its_parents_frames(
        s3_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: str) -> None:
    """QA review63d: a DataLoader worker took the shards its parent's to_polars() frame holds
    for room coming back on a small disk, and waited out DLOAD_CACHE_WAIT for a parent waiting
    on it; review63e: under a budget too (the parent itself is refused at once)."""
    monkeypatch.setenv("DLOAD_CACHE_WAIT", "60")
    _commit_two(s3_root, tmp_path)
    cache = str(tmp_path / "c")
    repo = Repository.open(s3_root, cache_dir=cache, cache_budget=budget)
    b = repo.dataset("b")
    frame = b.to_polars()  # the parent holds b's shards while b lives
    if budget == "unlimited":
        monkeypatch.setattr(os, "statvfs", SmallDisk(cache, 520_000))
    assert not repo.dataset("a").plan(full_shuffle=True).feasible
    assert _child_refused(s3_root, cache, budget)
    assert frame.collect().height == 400
