"""The one interface every benchmarked system implements.

An adapter knows how to ingest a workload's rows into its own format under a local directory,
and how to build one epoch's iterable for an :class:`IterSpec`. Timing, RSS, GET counts and
order recording live in ``bench/measure.py`` and are the same for every system.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = ["Adapter", "Ctx", "IterSpec", "Unsupported", "sample_from_row"]

BATCH = 256


class Unsupported(Exception):
    """The system has no equivalent of the requested mode; the cell is left blank."""


@dataclass(frozen=True)
class IterSpec:
    """One epoch to measure."""

    mode: str = "sequential"  # sequential | windowed | full
    workers: int = 0  # torch DataLoader num_workers (0: in process)
    unit: str = "sample"  # sample (dicts) | batch (Arrow batches or collated lists)
    #                       | map (dicts through common.cpu_map, run where the loader runs)
    cache: str = "warm"  # warm: data on local disk | cold: root on loopback S3, empty cache
    batch_size: int = BATCH
    seed: int = 17
    epoch: int = 0
    window: int = 10_000  # shuffle window / buffer, in samples
    cache_budget: int | None = None  # bytes; None: unlimited
    mix: tuple[float, float] | None = None  # weights of (A, B) for the mix workload
    limit: int | None = None  # samples to take (mix workload: the epoch length)

    def dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Ctx:
    """Where a system's data lives for one run."""

    local: Path  # the system's ingested output for the workload (warm)
    s3_url: str | None = None  # s3://bucket/prefix of the same output (cold)
    endpoint: str | None = None
    cache_dir: Path | None = None  # fresh, empty, per run
    local_b: Path | None = None  # mix: second dataset
    s3_url_b: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def sample_from_row(row: dict[str, Any]) -> dict[str, Any]:
    return row


class Adapter:
    """Base class: override ``ingest`` and ``epoch``."""

    name = "base"
    # How this system's output is uploaded (WebDataset needs public-read objects on moto).
    public_objects = False
    # Set by the harness before ingest: the peers' rows as dicts (built before the clock
    # starts), the workload's Arrow file, and a shard size override (workload (e)).
    prepared: list[dict[str, Any]] | None = None
    extra_source: str = ""
    shard_bytes: int | None = None

    def version(self) -> str:
        return ""

    def preload(self, spec: IterSpec) -> None:
        """Import what this system needs for ``spec`` and imports lazily (before the clock)."""

    def ingest(self, table: pa.Table, out: Path) -> dict[str, Any]:
        """Write ``table``'s rows in this system's format under ``out``; return extra stats."""
        raise NotImplementedError

    def epoch(self, ctx: Ctx, spec: IterSpec) -> Iterable[Any]:
        """One epoch's items: per-sample dicts or batches (``spec.unit``)."""
        raise NotImplementedError

    def keys(self, item: Any, unit: str) -> Iterator[int] | int:
        """The sample index (or indices, for a batch) of one item."""
        if unit == "sample":
            return int(item["__key__"])
        ks = item["__key__"]
        if isinstance(ks, (pa.Array, pa.ChunkedArray)):
            ks = ks.to_pylist()
        return (int(k) for k in ks)
