"""Helpers the adapters share: Arrow rows as sample dicts, torch DataLoader wrapping."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["batch_rows", "collate_dicts", "cpu_map", "identity", "in_loader", "worker_share"]


def batch_rows(batch: pa.RecordBatch | pa.Table) -> list[dict[str, Any]]:
    """One dict per row: fixed-size lists become numpy rows, everything else Python values."""
    cols: dict[str, Any] = {}
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if pa.types.is_fixed_size_list(col.type):
            width = col.type.list_size
            cols[name] = list(col.flatten().to_numpy().reshape(-1, width))
        else:
            cols[name] = col.to_pylist()
    names = list(cols)
    return [dict(zip(names, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]


def cpu_map(sample: dict[str, Any]) -> dict[str, Any]:
    """A CPU-bound per-sample map that holds the GIL (a stand-in for decoding/augmenting):
    a pure-Python pass over the first 4 KB of the first binary/tensor column."""
    for v in sample.values():
        if isinstance(v, (bytes, np.ndarray)):
            data = v[:4096] if isinstance(v, bytes) else v.reshape(-1)[:4096].tolist()
            acc = 0
            for x in data:
                acc = (acc * 31 + x) & 0xFFFFFFFF
            sample["checksum"] = acc
            break
    return sample


def identity(x: Any) -> Any:
    return x


def collate_dicts(samples: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Batch per-sample dicts into a dict of lists (no tensor conversion, like Arrow batches)."""
    first = samples[0]
    return {k: [s[k] for s in samples] for k in first}


def worker_share() -> tuple[int, int]:
    """(worker id, worker count) inside a DataLoader worker, else (0, 1)."""
    tud = sys.modules.get("torch.utils.data")
    if tud is None:  # no torch loaded: not inside a DataLoader worker
        return 0, 1
    info = tud.get_worker_info()
    return (0, 1) if info is None else (info.id, info.num_workers)


def in_loader(make: Callable[[], Iterable[Any]], workers: int) -> Iterable[Any]:
    """Run ``make()`` (which splits work with :func:`worker_share`) in ``workers`` processes."""
    if workers == 0:
        return make()
    import torch.utils.data as tud

    class _DS(tud.IterableDataset):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[Any]:
            return iter(make())

    return tud.DataLoader(_DS(), batch_size=None, num_workers=workers, collate_fn=identity,
                          prefetch_factor=2, persistent_workers=False)  # (as the peers)


def shuffled(items: Iterable[Any], window: int, rng: np.random.Generator) -> Iterator[Any]:
    """A windowed (buffer) shuffle: fill ``window`` items, emit a random one, refill."""
    buf: list[Any] = []
    for x in items:
        if len(buf) < window:
            buf.append(x)
            continue
        j = int(rng.integers(0, window))
        buf[j], x = x, buf[j]
        yield x
    rng.shuffle(buf)  # type: ignore[arg-type]
    yield from buf


class Pristine:
    """A peer that decompresses a local dataset in place when it first reads it (LitData,
    MosaicML streaming): a copy of the ingested files, made after the ingest's clock, is put
    back before every measured run, so that every warm epoch decompresses as dload_arrow's do
    (QA bench56: MosaicML's warm cells read shards an earlier epoch had decompressed)."""

    def after_ingest(self, out: Path) -> None:
        pristine = out.parent / (out.name + ".pristine")
        shutil.rmtree(pristine, ignore_errors=True)
        shutil.copytree(out, pristine)

    def restore(self, local: Path) -> None:
        pristine = local.parent / (local.name + ".pristine")
        if pristine.exists():
            shutil.rmtree(local, ignore_errors=True)
            shutil.copytree(pristine, local)
