"""Measure one epoch of one system in this (fresh) process; print a JSON result line.

Invoked by bench/run.py as ``python bench/measure.py SPEC_JSON``. A fresh process per
measurement gives each run its own peak RSS and a cold interpreter.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

# Every system runs on Arrow's allocator as importing dload_arrow sets it (jemalloc:
# dload_arrow/allocator.py), the limit row included, so that its ratios compare code, not
# allocators. Before anything loads pyarrow, as dload_arrow's docs ask.
import dload_arrow  # noqa: E402,F401
from bench.adapters import ADAPTERS  # noqa: E402
from bench.adapters.base import Ctx, IterSpec, Unsupported  # noqa: E402
from bench.quality import quality  # noqa: E402
from bench.s3srv import read_counts  # noqa: E402


def _dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(dirpath, f)).st_size
    return total


class _DiskWatch(threading.Thread):
    """Samples the cache directory's size (peak bytes on disk) every 20 ms (0.25 s missed
    peaks of a 0.75 s epoch: QA bench56)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path, self.peak, self.stop = path, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            self.peak = max(self.peak, _dir_bytes(self.path))


class _MemWatch(threading.Thread):
    """Samples the process's anonymous resident memory every 20 ms: ``ru_maxrss`` also counts
    the file pages of memory-mapped shards (dload_arrow reads a local root in place), which
    are the page cache's, shared, and dropped by the kernel at will."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.stop = 0.0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        self.peak = max(self.peak, int(line.split()[1]) / 1024)


def ingest(job: dict[str, Any]) -> dict[str, Any]:
    """Ingest the workload's Arrow file into ``job['out']`` with one system (timed)."""
    import pyarrow as pa

    from bench.adapters.mds import peer_rows

    adapter = ADAPTERS[job["system"]]()
    with pa.memory_map(job["source"]) as src:
        table = pa.ipc.open_file(src).read_all()
    adapter.extra_source = job["source"]
    if job.get("shard_bytes"):
        adapter.shard_bytes = job["shard_bytes"]
    # The peers take Python dicts: build them before the clock starts.
    adapter.prepared = peer_rows(table) if job["system"] in ("mosaicml-streaming",
                                                              "webdataset") else None
    out = Path(job["out"])
    before = _rss_now()  # the harness's own: the input table, the peers' prepared rows
    t0 = time.perf_counter()
    info = adapter.ingest(table, out)
    os.sync()
    seconds = time.perf_counter() - t0
    if hasattr(adapter, "after_ingest"):
        adapter.after_ingest(out)  # the harness's copy of what it wrote, off the clock
    return {"seconds": seconds, "rate": table.num_rows / seconds, "samples": table.num_rows,
            "mb_s": job["raw_bytes"] / seconds / 1e6, "bytes_on_disk": _dir_bytes(out),
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            # a system writing in worker processes (LitData's optimize): its largest worker
            "child_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "rss_before_mb": before, "info": info}


def _rss_now() -> float:
    """This process's resident MB now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(job: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {k: tuple(v) if k == "mix" and v else v
                              for k, v in job["spec"].items()}
    spec = IterSpec(**fields)
    c = job["ctx"]
    ctx = Ctx(local=Path(c["local"]), s3_url=c.get("s3_url"), endpoint=c.get("endpoint"),
              cache_dir=Path(c["cache_dir"]) if c.get("cache_dir") else None,
              local_b=Path(c["local_b"]) if c.get("local_b") else None,
              s3_url_b=c.get("s3_url_b"), extra=c.get("extra", {}))
    adapter = ADAPTERS[job["system"]]()
    # Imports happen before the clock starts: the library, torch (DataLoader), pyarrow.
    # torch for every system, as in any training process: the peers import it themselves,
    # and a peak RSS with it for some systems only compared imports (QA bench56: ~185 MB).
    import torch.utils.data  # noqa: F401

    adapter.version()
    adapter.preload(spec)
    if hasattr(adapter, "restore"):
        adapter.restore(ctx.local)  # type: ignore[attr-defined]
        if ctx.local_b:
            adapter.restore(ctx.local_b)  # type: ignore[attr-defined]
    if ctx.cache_dir:
        ctx.cache_dir.mkdir(parents=True, exist_ok=True)
    watch = _DiskWatch(ctx.cache_dir) if (spec.cache_budget and ctx.cache_dir) else None
    counts_url = c.get("counts_url")
    before = read_counts(counts_url) if spec.cache == "cold" and counts_url else None
    order: list[Any] = []
    count = 0
    limit = spec.limit
    first = None
    if watch:
        watch.start()
    mem = _MemWatch()
    mem.start()
    t0 = time.perf_counter()
    try:
        items = adapter.epoch(ctx, spec)
    except Unsupported as e:
        return {"unsupported": str(e)}
    for item in items:
        if first is None:
            first = time.perf_counter() - t0
        k = adapter.keys(item, "sample" if spec.unit == "map" else spec.unit)
        if isinstance(k, int):
            order.append(k)
            count += 1
        else:
            arr = np.fromiter(k, np.int64) if not isinstance(k, np.ndarray) else k
            order.append(arr)
            count += len(arr)
        if limit and count >= limit:
            break
    seconds = time.perf_counter() - t0
    del items
    mem.stop.set()
    if watch:
        watch.stop.set()
    keys = np.concatenate([np.atleast_1d(np.asarray(o, np.int64)) for o in order]) if order \
        else np.zeros(0, np.int64)
    if limit:
        keys = keys[:limit]
        count = min(count, limit)
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out: dict[str, Any] = {
        "samples": count, "seconds": seconds, "rate": count / seconds if seconds else 0.0,
        "first_batch_s": first, "rss_mb": self_rss, "worker_rss_mb": child_rss,
        "rss_anon_mb": mem.peak or None,
    }
    if before is not None:
        got = read_counts(counts_url)  # type: ignore[arg-type]
        out.update(gets=got["get"] - before["get"],
                   gets_ranged=got["get_ranged"] - before["get_ranged"],
                   get_bytes=got["bytes"] - before["bytes"])
    if watch:
        out["cache_peak_bytes"] = max(watch.peak, _dir_bytes(ctx.cache_dir))  # type: ignore[arg-type]
    n = job.get("n")
    if spec.mix:
        split = job["n_a"]
        out["mix_share_a"] = float(np.mean(keys < split)) if len(keys) else None
    elif spec.mode != "sequential" or job.get("quality"):
        out["quality"] = quality(keys, n)
    else:
        out["in_order"] = bool(np.all(np.diff(keys) > 0)) if spec.workers == 0 else None
    out["complete"] = bool(spec.limit or count == n)
    return out


if __name__ == "__main__":
    job = json.loads(sys.argv[1])
    try:
        result = ingest(job) if job.get("kind") == "ingest" else measure(job)
    except Exception as e:
        import traceback

        traceback.print_exc()
        result = {"error": f"{type(e).__name__}: {e}"[:500]}
    sys.stdout.flush()
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)
