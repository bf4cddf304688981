"""One measurement in a fresh child process (``bench/measure.py``), and what the machine
gave it: the hypervisor's steal share of the CPU while it ran (``/proc/stat``)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 600  # seconds an epoch may take before the run is stopped


def cpu_times() -> list[int]:
    """The machine's CPU time counters (``/proc/stat``'s first line; empty elsewhere)."""
    try:
        with open("/proc/stat") as f:
            return [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return []


def steal_share(before: list[int], after: list[int]) -> float | None:
    """Of the CPU time the machine was busy or wanted between two readings, the share the
    hypervisor gave to other guests (steal): on a throttled VM every figure is slower."""
    if len(before) < 8 or len(after) < 8:
        return None
    d = [b - a for a, b in zip(before, after, strict=False)]
    busy = d[0] + d[1] + d[2] + d[5] + d[6]  # user, nice, system, irq, softirq
    return round(d[7] / (busy + d[7]), 3) if busy + d[7] > 0 else None


def child(job: dict[str, Any], timeout: int = TIMEOUT) -> dict[str, Any]:
    before = cpu_times()
    out = _child(job, timeout)
    steal = steal_share(before, cpu_times())
    if steal is not None:
        out["steal"] = steal
    return out


def _child(job: dict[str, Any], timeout: int) -> dict[str, Any]:
    cmd = [sys.executable, str(ROOT / "bench" / "measure.py"), json.dumps(job)]
    env = dict(os.environ, PYTHONHASHSEED="0", AWS_ACCESS_KEY_ID="bench",
               AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
               TOKENIZERS_PARALLELISM="false")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        n = int(job.get("n") or 0)
        return {"error": f"no epoch within {timeout} s: under {n / timeout:,.0f} samples/s "
                         "(slow or stalled; the run was stopped)"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("RESULT "):
            out = json.loads(line[7:])
            if "error" in out:
                out["stderr"] = p.stderr[-1500:]
            return out
    return {"error": f"exit {p.returncode}", "stderr": p.stderr[-1500:]}


def summarize(runs: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    vals = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
            "n": len(vals)}
