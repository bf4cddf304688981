"""The cells of a run: each (mode, cache, workers, unit) measured for a workload, the core
subset of a full-size run on a small machine, and the ``--cells`` filter.
"""

from __future__ import annotations

import itertools
from typing import Any

CORE = [  # the cells of a full-size run on a small machine (--core)
    {"mode": "sequential", "cache": "warm", "workers": 0, "unit": "sample"},
    {"mode": "sequential", "cache": "warm", "workers": 0, "unit": "batch"},
    {"mode": "sequential", "cache": "cold", "workers": 0, "unit": "sample"},
    {"mode": "sequential", "cache": "cold", "workers": 0, "unit": "batch"},
    {"mode": "windowed", "cache": "warm", "workers": 0, "unit": "sample"},
    {"mode": "full", "cache": "warm", "workers": 0, "unit": "sample"},
    {"mode": "sequential", "cache": "warm", "workers": 2, "unit": "batch"},
    {"mode": "sequential", "cache": "warm", "workers": 0, "unit": "map"},
    {"mode": "sequential", "cache": "warm", "workers": 2, "unit": "map"},
]


def cells(workload: str) -> list[dict[str, Any]]:
    """The (mode, cache, workers, unit) cells measured for a workload."""
    c = []
    if workload == "image":
        for cache, workers, unit in itertools.product(("warm", "cold"), (0, 2),
                                                      ("sample", "batch")):
            c.append({"mode": "sequential", "cache": cache, "workers": workers, "unit": unit})
        for workers, unit in itertools.product((0, 2), ("sample", "batch")):
            c.append({"mode": "windowed", "cache": "warm", "workers": workers, "unit": unit})
        c.append({"mode": "windowed", "cache": "cold", "workers": 0, "unit": "sample"})
        for unit in ("sample", "batch"):
            c.append({"mode": "full", "cache": "warm", "workers": 0, "unit": unit})
        c.append({"mode": "full", "cache": "cold", "workers": 0, "unit": "sample"})
        for workers in (0, 2):  # a CPU-bound per-sample map: do workers help?
            c.append({"mode": "sequential", "cache": "warm", "workers": workers, "unit": "map"})
    elif workload in ("tabular", "tokens"):
        for cache, unit in itertools.product(("warm", "cold"), ("sample", "batch")):
            c.append({"mode": "sequential", "cache": cache, "workers": 0, "unit": unit})
        c.append({"mode": "sequential", "cache": "warm", "workers": 2, "unit": "batch"})
        c.append({"mode": "windowed", "cache": "warm", "workers": 0, "unit": "sample"})
        c.append({"mode": "full", "cache": "warm", "workers": 0, "unit": "sample"})
    elif workload == "mix":
        for cache in ("warm", "cold"):
            c.append({"mode": "windowed", "cache": cache, "workers": 0, "unit": "sample"})
    elif workload == "big":
        for mode in ("sequential", "windowed"):
            c.append({"mode": mode, "cache": "cold", "workers": 0, "unit": "sample"})
    return c


def _match(cell: dict[str, Any], spec: str) -> bool:
    """Whether ``cell`` matches every ``key=value`` of ``spec`` (comma-separated); a value
    may list alternatives with ``|`` (``mode=sequential|windowed``)."""
    for part in filter(None, spec.split(",")):
        k, _, v = part.partition("=")
        if str(cell.get(k)) not in v.split("|"):
            return False
    return True


def _cell(c: dict[str, Any]) -> str:
    return f"{c['mode']}/{c['cache']}/w{c['workers']}/{c['unit']}"
