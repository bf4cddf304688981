"""A/B of a proposed fix, monkeypatched into this process only (the package is not edited).

    bench/.venv-peers/bin/python bench/notes/ab_fixes.py bench/data/image-100000/dload_arrow \
        windowed

Alternates epochs with and without the fix in one process, so both see the same load:
``dicts``: pipeline rows built column by column (``read.samples.batch_to_samples``, what
``pipeline.chunks.row_dicts`` has used since) instead of row by row (``to_pylist``, what it
used before).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow as pa

import dload_arrow.pipeline.chunks as chunks
import dload_arrow.pipeline.window_make as window_make
from dload_arrow import Repository
from dload_arrow.read.samples import batch_to_samples


def row_by_row(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """The converter before the fix: one dict per row, cell by cell."""
    return batch.to_pylist()


def use(fix: bool) -> None:
    conv = batch_to_samples if fix else row_by_row
    chunks.row_dicts = conv  # chunk_items looks it up at each call
    window_make.row_dicts = conv  # item windows imported it by name


def epoch(ds: Any, mode: str) -> tuple[float, list[str]]:
    pipe = ds.shuffle(10_000, seed=1) if mode == "windowed" else ds.shuffle(full=True, seed=1)
    t = time.perf_counter()
    n, first = 0, []
    for s in pipe:
        n += 1
        if n <= 3:
            first.append(s["__key__"])
    return n / (time.perf_counter() - t), first


def main() -> None:
    root, mode = sys.argv[1], sys.argv[2]
    ds = Repository.open(root, cache_dir="/tmp/ab-fixes-cache").dataset("data")
    epoch(ds, mode)  # a warm-up epoch, not shown: the first of a process runs slower
    for r in range(4):  # each order twice: an A/A run gained up to 1.9x from position alone
        for fix in ((False, True) if r % 2 == 0 else (True, False)):
            use(fix)
            rate, first = epoch(ds, mode)
            print(f"{mode} fix={fix}: {rate:,.0f} samples/s, first keys {first}", flush=True)


if __name__ == "__main__":
    main()
