"""Materialise a version in the cache (``pull``) and report what the cache holds (``status``)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from dload_arrow.config import progress_wanted
from dload_arrow.errors import InfeasiblePlanError
from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.context import ReadContext
from dload_arrow.read.planner import plan_read
from dload_arrow.read.reader import all_units
from dload_arrow.sizes import BUDGET_WAYS, format_bytes
from dload_arrow.store.manifest import Manifest

__all__ = ["CacheStatus", "PullReport", "Residency", "cache_status", "downloading", "pull"]

PULL_THREADS = 8


@dataclass(frozen=True)
class PullReport:
    """What a pull did: shards and bytes in the version, and those it had to download."""

    name: str
    version: str
    shards_total: int
    shards_fetched: int
    bytes_total: int
    bytes_fetched: int
    seconds: float
    in_place: bool
    shards_resident: int | None = None  # in the cache when the pull ended (None: in place)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython/Jupyter: str()
        p.text(str(self))

    def __str__(self) -> str:
        if self.in_place:
            return (f"{self.name}@{self.version[:12]}: local root, read in place "
                    f"({self.shards_total} shards, {format_bytes(self.bytes_total)}); "
                    "nothing to pull")
        fetched = (f"fetched {self.shards_fetched} ({format_bytes(self.bytes_fetched)}) in "
                   f"{self.seconds:.1f}s")
        if self.shards_resident is not None and self.shards_resident < self.shards_total:
            return (f"{self.name}@{self.version[:12]}: only {self.shards_resident} of "
                    f"{self.shards_total} shards are in the cache now (evicted since: other "
                    f"readers needed the room, or the cache was cleared); {fetched}")
        return (f"{self.name}@{self.version[:12]}: {self.shards_total} shards "
                f"({format_bytes(self.bytes_total)}) in the cache; {fetched}")


def pull(ctx: ReadContext, manifest: Manifest, *, progress: bool | None = None,
         threads: int = PULL_THREADS) -> PullReport:
    """Download every shard of ``manifest`` into the cache, concurrently.

    Resumable: shards already cached are skipped, so an interrupted pull continues where it
    stopped. Refused with InfeasiblePlanError, before any request, when the version cannot fit
    the budget or the free disk. Local roots are read in place: nothing is copied.
    """
    start = time.perf_counter()
    plan = plan_read(ctx, manifest, all_units(manifest), full_shuffle=True, purpose="pull").check()
    unique = {s.digest: s.bytes for s in manifest.shards}
    total = sum(unique.values())
    if plan.in_place:
        return PullReport(manifest.name, manifest.version, len(unique), 0, total, 0,
                          time.perf_counter() - start, True)
    cache = ctx.cache()
    held = sum(e.bytes for e in cache.entries() if e.held and e.digest not in unique)
    if cache.budget_bytes < UNLIMITED and total > cache.budget_bytes - held:
        raise InfeasiblePlanError(
            f"pull {manifest.name}@{manifest.version[:12]}: the version is "
            f"{format_bytes(total)}, and of the cache budget ({format_bytes(cache.budget_bytes)})"
            f" {format_bytes(held)} is held by readers running now, so it cannot all stay in "
            "the cache: wait for them to finish, or raise the budget "
            f"({BUDGET_WAYS})"
        )
    todo = {d: n for d, n in unique.items() if not cache.is_cached(d, n)}
    bar: Any = None
    if progress_wanted(progress) and todo:
        from dload_arrow.config import progress_bar

        bar = progress_bar()(total=sum(todo.values()), desc=f"pull {manifest.name}",
                             unit="B", unit_scale=True, leave=False)
    label = f"{manifest.name}@{manifest.version[:12]}"

    def fetch(item: tuple[str, int]) -> int:
        digest, nbytes = item
        hold = cache.acquire(ctx.storage, digest, nbytes, dataset=label)
        hold.release()
        if bar is not None:
            bar.update(nbytes)
        return nbytes if hold.downloaded else -1  # -1: another reader brought it meanwhile

    try:
        with ThreadPoolExecutor(max(1, threads), thread_name_prefix="dload-pull") as pool:
            got = [n for n in pool.map(fetch, todo.items()) if n >= 0]
    finally:
        if bar is not None:
            bar.close()
    resident = sum(cache.is_cached(d, n) for d, n in unique.items())
    return PullReport(manifest.name, manifest.version, len(unique), len(got), total, sum(got),
                      time.perf_counter() - start, False, resident)


@dataclass(frozen=True)
class Residency:
    """How much of one dataset version is in the cache."""

    name: str
    version: str
    cached_bytes: int
    total_bytes: int
    cached_shards: int
    total_shards: int

    @property
    def fraction(self) -> float:
        return self.cached_bytes / self.total_bytes if self.total_bytes else 1.0


@dataclass(frozen=True)
class CacheStatus:
    """The cache of this machine: budget, use, free disk, and residency per dataset version."""

    cache_dir: str
    budget_bytes: int
    used_bytes: int
    free_disk_bytes: int
    shards: int
    held_shards: int
    in_place: bool
    datasets: tuple[Residency, ...]
    downloading_bytes: int = 0  # reserved by downloads in progress (counted in the budget)
    limit_bytes: int = UNLIMITED  # the budget in effect: less when the disk cannot hold it

    @property
    def budget(self) -> str:
        shown = "unlimited" if self.budget_bytes >= UNLIMITED else format_bytes(self.budget_bytes)
        if self.limit_bytes < self.budget_bytes:
            shown += f" (its disk holds at most {format_bytes(self.limit_bytes)})"
        return shown

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for ``--json``."""
        return {
            "cache_dir": self.cache_dir,
            "budget_bytes": None if self.budget_bytes >= UNLIMITED else self.budget_bytes,
            "used_bytes": self.used_bytes, "free_disk_bytes": self.free_disk_bytes,
            "shards": self.shards, "held_shards": self.held_shards, "in_place": self.in_place,
            "downloading_bytes": self.downloading_bytes,
            "limit_bytes": None if self.limit_bytes >= UNLIMITED else self.limit_bytes,
            "datasets": [r.__dict__ for r in self.datasets],
        }

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython/Jupyter: str()
        p.text(str(self))

    def __str__(self) -> str:
        lines = [f"cache {self.cache_dir}: {format_bytes(self.used_bytes)} used of "
                 f"{self.budget} ({self.shards} shards, {self.held_shards} held"
                 f"{downloading(self.downloading_bytes)}), "
                 f"{format_bytes(self.free_disk_bytes)} free on disk"]
        if self.in_place:
            lines.append("the root is a local directory: shards are read in place, not cached")
        rows = [("dataset", "version", "cached", "total", "shards")]
        for r in self.datasets:
            rows.append((r.name, r.version[:12], format_bytes(r.cached_bytes),
                         format_bytes(r.total_bytes), f"{r.cached_shards}/{r.total_shards}"))
        if len(rows) > 1:
            widths = [max(len(row[i]) for row in rows) for i in range(5)]
            lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
                      for row in rows]
        return "\n".join(lines)


def cache_status(ctx: ReadContext, manifests: Iterable[Manifest]) -> CacheStatus:
    """Budget, use and the residency of each of ``manifests`` (local stats only; nothing is
    evicted, whatever the budget)."""
    cache = ctx.cache(trim=False)
    entries = cache.entries()
    present = {e.digest: e.bytes for e in entries}
    rows = []
    for m in manifests:
        unique = dict(zip(m.table.column("digest").to_pylist(),  # (no ShardEntry per
                          m.table.column("bytes").to_pylist(), strict=True))  # shard: QA)
        hit = {d: n for d, n in unique.items() if present.get(d) == n}
        rows.append(Residency(m.name, m.version, sum(hit.values()), sum(unique.values()),
                              len(hit), len(unique)))
    files, dead = sum(present.values()), list[int]()
    reserved = max(0, cache.used_bytes(dead) - files)  # downloads under way (a killed one's
    return CacheStatus(cache.dir, cache.budget_bytes, files + reserved + sum(dead),  # file:
                       cache.free_disk(),  # its bytes, until a reader removes it)
                       len(entries), sum(e.held for e in entries), ctx.in_place, tuple(rows),
                       reserved, cache.budget_bytes if ctx.in_place else cache.limit())


def downloading(nbytes: int) -> str:
    """``", 2.2 MB being downloaded"`` for a status line (empty when none is)."""
    return f", {format_bytes(nbytes)} being downloaded" if nbytes else ""
