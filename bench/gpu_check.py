"""to_device on a CUDA machine: batches per second into the GPU, with and without a GPU step.

Run by hand where a GPU is (CI has none; results go to bench/notes/gpu.md):

    python bench/gpu_check.py --out gpu.json

Each cell streams the same committed images (uint8, local root, page cache warm) through a
:class:`StatefulLoader` and measures whole epochs, after one warm-up epoch:

- ``host``: the loader alone, batches left on the CPU (the ceiling for any copy scheme);
- ``blocking``: the loop copies each batch itself (``v.to("cuda")``), as a plain loop does;
- ``to_device``: :func:`dload_arrow.torch.to_device`, pinned copies on a side stream;
- each again with a fixed GPU step per batch (``--step-ms`` of bf16 matrix products), to show
  whether the copies hide behind the step.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dload_arrow import Repository
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device


def build(root: str, n: int, side: int) -> Repository:
    """``n`` images of 3 x side x side uint8 (smooth noise: they compress as photos do)."""
    repo = Repository.open(root, cache_budget="unlimited")

    def rows() -> Iterable[tuple[str, dict[str, Any]]]:
        rng = np.random.default_rng(0)
        base = rng.integers(0, 256, (3, side, side), dtype=np.uint8)
        for i in range(n):
            noise = rng.integers(0, 16, (3, side, side), dtype=np.uint8)
            yield f"img{i:06d}", {"image": base + noise, "label": i % 1000}

    repo.commit("images", rows(), progress=False)
    return repo


def sync(device: str) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def gpu_step(ms: float, device: str) -> Callable[[dict[str, Any]], None]:
    """A step of about ``ms`` milliseconds on the GPU that reads the batch (0: no step)."""
    side = 4096 if device.startswith("cuda") else 256
    a = torch.randn(side, side, device=device, dtype=torch.bfloat16)
    for _ in range(5):  # the first products set up the library: not in the timing
        a @ a
    sync(device)
    start = time.perf_counter()
    for _ in range(20):
        a @ a
    sync(device)
    per = (time.perf_counter() - start) / 20 * 1000
    reps = round(ms / per) if ms else 0

    def step(batch: dict[str, Any]) -> None:
        batch["image"].float().mean()  # the step uses the batch: it waits for its copy
        for _ in range(reps):
            a @ a

    return step


def epoch_rate(make: Callable[[], Iterable[Any]], move: str, step: Any, epochs: int,
               device: str) -> float:
    """Samples per second over ``epochs`` measured epochs (after one warm-up)."""
    rates = []
    for e in range(epochs + 1):
        loader = make()
        n = 0
        sync(device)
        start = time.perf_counter()
        for batch in loader:
            if move == "blocking":
                batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v
                         for k, v in batch.items()}
            if step is not None and move != "host":
                step(batch)
            n += len(batch["label"])
        sync(device)
        if e:
            rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=8192)
    ap.add_argument("--side", type=int, default=96)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--step-ms", type=float, default=10.0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of this script")
    ap.add_argument("--workers", default="0,4", help="worker counts to run, comma-separated")
    args = ap.parse_args()
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("gpu_check: needs CUDA (torch.cuda.is_available() is False here); "
                         "--device cpu runs the script itself")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        repo = build(tmp, args.samples, args.side)
        built = time.perf_counter() - t0
        pipe = repo.dataset("images").shuffle(1024, seed=0).batch(args.batch)
        timed = gpu_step(args.step_ms, device)
        steps = {"none": None, f"{args.step_ms:g} ms": timed}
        cells = []
        for workers in (int(w) for w in args.workers.split(",")):
            for pin in (False, True):
                for move in ("host", "blocking", "to_device"):
                    for step_name, step in steps.items():
                        if move == "host" and step is not None:
                            continue

                        def make(w: int = workers, p: bool = pin, m: str = move) -> Any:
                            loader = StatefulLoader(as_iterable_dataset(pipe), num_workers=w,
                                                    pin_memory=p)
                            return to_device(loader, device) if m == "to_device" else loader

                        rate = epoch_rate(make, move, step, args.epochs, device)
                        cells.append({"workers": workers, "pin_memory": pin, "move": move,
                                      "gpu_step": step_name, "samples_per_s": round(rate)})
                        print(json.dumps(cells[-1]), flush=True)
        a0 = time.perf_counter()
        for _ in range(args.samples // args.batch):
            timed({"image": torch.zeros(1, device=device)})
        sync(device)
        step_only = args.samples // args.batch * args.batch / (time.perf_counter() - a0)
    doc = {
        "machine": {"device": torch.cuda.get_device_name(0) if device.startswith("cuda")
                    else "cpu", "python": platform.python_version(),
                    "torch": torch.__version__, "cpus": __import__("os").cpu_count()},
        "samples": args.samples, "image": [3, args.side, args.side], "batch": args.batch,
        "build_s": round(built, 1), "step_alone_samples_per_s": round(step_only),
        "cells": cells,
    }
    print(json.dumps(doc["machine"]), "step alone", round(step_only), "samples/s")
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
