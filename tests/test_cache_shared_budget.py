"""Several processes streaming through one small cache all finish: prefetch never holds room
that another process's current shard needs (a QA finding: three readers on a 200KB budget
hung for the 600 s wait timeout, each holding a finished look-ahead shard while its current
one waited for room)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from dload_arrow import Repository
from dload_arrow.read.cache import Cache

_READER = textwrap.dedent("""
    import sys
    from dload_arrow import Repository
    repo = Repository.open(sys.argv[1], cache_dir=sys.argv[2], cache_budget=sys.argv[3])
    keys = [s["__key__"] for s in repo.dataset(sys.argv[4]).samples(columns=["x"])]
    assert len(keys) == len(set(keys)), "a sample came twice"
    print(len(keys), flush=True)
""")


def _commit(repo: Repository, name: str, n: int) -> None:
    samples = [(f"{name}-{i:05d}", {"x": i, "blob": os.urandom(500)}) for i in range(n)]
    repo.commit(name, samples, shard_size=40_000, row_group_size=9_000, progress=False)


def test_three_processes_on_a_small_shared_budget_all_finish(
        s3_root: str, cache_dir: str, tmp_path: Path, s3_server) -> None:
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "w"), cache_budget="unlimited")
    _commit(writer, "d1", 6000)
    _commit(writer, "d4", 6000)
    shards = writer.manifest("d1").shards + writer.manifest("d4").shards
    assert 40_000 < max(s.bytes for s in shards) < 65_000 and len(shards) >= 16
    budget = 200_000  # three shards and a bit: fewer than the readers' windows together
    s3_server.clear()
    procs = [subprocess.Popen([sys.executable, "-c", _READER, s3_root, cache_dir, str(budget),
                               name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("d1", "d1", "d4")]
    outs = []
    deadline = time.monotonic() + 150  # the bug made the readers wait for the 600 s timeout
    try:
        for p in procs:
            try:
                out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                out, err = "", "still running: deadlocked?"
            outs.append((p.returncode, out.strip(), err[-2000:]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [o[:2] for o in outs] == [(0, "6000")] * 3, outs
    assert Cache(cache_dir, budget).used_bytes() <= budget
