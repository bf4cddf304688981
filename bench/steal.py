"""CPU stolen by the hypervisor: recorded with every run, and runs it starved run again.

On a shared VM the host can take a large share of the guest's CPU (this machine showed 0-57%
within an hour, ``steal`` in ``/proc/stat``). A run that lost much of its CPU says little about
the loader, and a loader that keeps two cores busy loses more of it than one that does not.
Every run records its share (:func:`with_steal`); with ``--max-steal`` a run above the limit is
run again after a pause (:func:`steady`), the same for every system, and counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["STEAL_PAUSE", "cpu_times", "steady", "steal_share", "with_steal"]

#: Seconds to wait before running again a run that the hypervisor starved.
STEAL_PAUSE = 30


def cpu_times() -> list[int]:
    """The machine's CPU time counters (``/proc/stat``'s first line; empty elsewhere)."""
    try:
        with open("/proc/stat") as f:
            return [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return []


def steal_share(before: list[int], after: list[int]) -> float | None:
    """Of the CPU time the machine was busy or wanted between two readings, the share the
    hypervisor gave to other guests (steal)."""
    if len(before) < 8 or len(after) < 8:
        return None
    d = [b - a for a, b in zip(before, after, strict=False)]
    busy = d[0] + d[1] + d[2] + d[5] + d[6]  # user, nice, system, irq, softirq
    return round(d[7] / (busy + d[7]), 3) if busy + d[7] > 0 else None


def with_steal(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``'s result with ``steal``: the share stolen while it ran (when known)."""
    before = cpu_times()
    out = run()
    steal = steal_share(before, cpu_times())
    if steal is not None:
        out["steal"] = steal
    return out


def steady(run: Callable[[], dict[str, Any]], max_steal: float | None, retries: int,
           say: Callable[[str], None], label: str, pause: float = STEAL_PAUSE,
           measure: Callable[[Callable[[], dict[str, Any]]], dict[str, Any]] = with_steal,
           ) -> dict[str, Any]:
    """``run()``, run again (up to ``retries`` times, after ``pause`` seconds) while more than
    ``max_steal`` of its CPU was stolen; each result has its ``steal`` (:func:`with_steal`), the
    one kept says how often it was run again (``stolen_retries``)."""
    res = measure(run)
    tries = 0
    while max_steal is not None and tries < retries and res.get("steal", 0) > max_steal:
        say(f"  {label}: {res['steal']:.0%} of the CPU stolen; again in {pause:.0f} s")
        time.sleep(pause)
        tries += 1
        res = {**measure(run), "stolen_retries": tries}
    return res
