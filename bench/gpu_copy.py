"""Host-to-GPU copies alone: what each way of moving a batch costs, with no loader behind it.

Run by hand where a GPU is (results go to bench/notes/gpu.md):

    python bench/gpu_copy.py --out copy.json

The batches are built once in host memory (images of 3 x side x side uint8 and int64 labels,
as bench/gpu_check.py streams) and cycled, so each cell times the move alone:

- ``blocking``: ``v.to("cuda")`` from pageable memory, in the loop (the driver stages it);
- ``pin+async``: ``v.pin_memory().to("cuda", non_blocking=True)`` in the loop;
- ``to_device``: :func:`dload_arrow.torch.to_device` over the list (its thread pins and copies);
- ``to_device pinned``: the same over batches already in page-locked memory (no pin copy).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

from dload_arrow.torch import to_device


def batches(n: int, batch: int, side: int, pinned: bool) -> list[dict[str, torch.Tensor]]:
    """``n`` distinct batches (distinct memory: no copy is served from a cache)."""
    out = []
    for i in range(n):
        b = {"image": torch.randint(0, 256, (batch, 3, side, side), dtype=torch.uint8),
             "label": torch.arange(i * batch, (i + 1) * batch)}
        out.append({k: v.pin_memory() for k, v in b.items()} if pinned else b)
    return out


def rate(run: Callable[[], Iterable[Any]], device: str, repeats: int) -> float:
    """Batches per second over the whole iterable, median of ``repeats`` (after a warm-up)."""
    rates = []
    for r in range(repeats + 1):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        n = 0
        for moved in run():
            moved["image"].view(-1)[:1].sum()  # the loop uses the batch: waits for its copy
            n += 1
        torch.cuda.synchronize(device)
        if r:
            rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=32, help="distinct batches in host memory")
    ap.add_argument("--rounds", type=int, default=10, help="times the list is cycled per run")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--side", type=int, default=96)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_copy: needs CUDA (torch.cuda.is_available() is False here)")
    dev = "cuda"
    plain = batches(args.batches, args.batch, args.side, pinned=False)
    pinned = batches(args.batches, args.batch, args.side, pinned=True)
    per_batch = sum(v.nbytes for v in plain[0].values())

    def cycle(src: list[dict[str, torch.Tensor]]) -> Iterable[dict[str, torch.Tensor]]:
        for _ in range(args.rounds):
            yield from src

    ways: dict[str, Callable[[], Iterable[Any]]] = {
        "blocking": lambda: ({k: v.to(dev) for k, v in b.items()} for b in cycle(plain)),
        "pin+async": lambda: ({k: v.pin_memory().to(dev, non_blocking=True)
                               for k, v in b.items()} for b in cycle(plain)),
        "to_device": lambda: to_device(cycle(plain), dev),
        "to_device prefetch=4": lambda: to_device(cycle(plain), dev, prefetch=4),
        "to_device pinned": lambda: to_device(cycle(pinned), dev),
    }
    cells = []
    for name, run in ways.items():
        per_s = rate(run, dev, args.repeats)
        cells.append({"move": name, "batches_per_s": round(per_s, 1),
                      "gb_per_s": round(per_s * per_batch / 1e9, 2)})
        print(json.dumps(cells[-1]), flush=True)
    doc = {"machine": {"device": torch.cuda.get_device_name(0),
                       "python": platform.python_version(), "torch": torch.__version__},
           "batch_bytes": per_batch, "cells": cells}
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
