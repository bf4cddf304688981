"""Read plans: will a schedule fit this machine? Decided before any request leaves it.

A plan sizes each consumer's look-ahead window from the cache budget (see
:mod:`dload_arrow.plan.window`) and compares the resident set (window x shard size per
consumer, or the whole schedule for a full shuffle) with the budget and the free disk. The only
I/O is local: statvfs and stat of the cache directory. Local roots are read in place and need no
cache at all.

The budget a plan uses is the one in effect (``Cache.limit``): the configured budget, or less
when the disk cannot hold it, and the error's fixes are only those that apply (no "raise the
budget" when the disk is what is short).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dload_arrow.args import check_bool
from dload_arrow.plan.window import (
    DEFAULT_PREFETCH,
    UNLIMITED,
    choose_window,
    full_resident_bytes,
    window_resident_bytes,
)
from dload_arrow.read.cache_space import free_disk
from dload_arrow.read.context import ReadContext
from dload_arrow.read.parked import DROP_FRAMES, parked_shards
from dload_arrow.read.plan_report import PlanReport, check_plans
from dload_arrow.read.planner_fit import (
    ALTERNATIVES,
    Verdict,
    budgets_of,
    fmt_budget,
    fmt_need,
    reasons_for,
)
from dload_arrow.sizes import format_bytes, format_bytes_up, plural
from dload_arrow.store.manifest import Manifest

__all__ = ["PlanReport", "ReadPlan", "check_plans", "plan_read", "schedule_shards"]


def schedule_shards(units: Sequence[tuple[int, int]]) -> list[int]:
    """Distinct shard indices of a schedule, in order of first use."""
    return list(dict.fromkeys(s for s, _ in units))


@dataclass(frozen=True)
class ReadPlan(Verdict):
    """How one source will be read on this machine, and whether it fits."""

    dataset: str
    version: str
    units: int
    shards: int
    total_bytes: int
    max_shard_bytes: int
    window_shards: int
    consumers: int
    full_shuffle: bool
    in_place: bool
    resident_bytes: int
    cached_bytes: int
    budget_bytes: int
    free_disk_bytes: int
    cache_dir: str
    reasons: tuple[str, ...] = field(default=())
    # what needs every shard at once, when it is not a full shuffle ("to_polars", "pull")
    purpose: str = ""
    # the configured budget; ``budget_bytes`` is less when the disk cannot hold this one
    budget_setting_bytes: int = UNLIMITED
    # other cached shards the cache may evict to make room for this plan's
    evictable_bytes: int = 0
    digests: frozenset[str] = frozenset()  # the plan's shards (a remote root's)
    parked_bytes: int = 0  # other shards this process's to_polars() frames keep (parked.py)

    @property
    def prefetch(self) -> int:
        """Shards fetched ahead of the one being read."""
        return max(0, self.window_shards - 1)

    @property
    def message(self) -> str:
        """Why the plan does not fit and how to fix it ('' when it fits)."""
        if not self.reasons:
            return ""
        return (
            f"cannot read {self.dataset} ({self.version[:12]}) on this machine: "
            + "; ".join(self.reasons) + ". Fixes: " + "; ".join(self._fixes())
        )

    # IPython looks for it before the dataclass's __repr__, in this class's own dict
    _repr_pretty_ = Verdict._repr_pretty_

    def _fixes(self) -> list[str]:
        fixes = [DROP_FRAMES] if self.parked_bytes else []
        fixes += self._budget_fix()
        streams = self.consumers * self.max_shard_bytes <= self.budget_bytes  # one shard each
        if self.full_shuffle and self.purpose and not streams:  # (QA readonly55)
            fixes.append("commit with a smaller shard_size (a stream, too, holds a shard)")
        elif self.full_shuffle and self.purpose:
            fixes.append(ALTERNATIVES.get(self.purpose, "read it in a stream (batches(), "
                                                         "samples(), to_arrow())"))
        elif self.full_shuffle:
            fixes.append("use a windowed shuffle, which keeps only a window of shards resident")
        elif self.window_shards > 1:
            least = self.consumers * self.max_shard_bytes
            fixes.append(f"lower prefetch (prefetch=0 needs {fmt_need(least)})")
        if not self.full_shuffle and self.consumers > 1:
            fixes.append(f"run fewer consumers on this machine (now {self.consumers}: "
                         "DataLoader workers x local ranks)")
        if not self.full_shuffle:
            fixes.append("commit with a smaller shard_size")
        if self._disk_short():
            fixes.append(f"free disk space under {self.cache_dir} or point cache_dir at a "
                         "bigger disk")
        return fixes

    def __repr__(self) -> str:  # a notebook cell shows it: not every shard's digest (QA nb61)
        return f"<ReadPlan {self}>"

    def __str__(self) -> str:
        mode = "full shuffle" if self.full_shuffle else f"window {self.window_shards} shards"
        budget, setting = fmt_budget(self.budget_bytes), fmt_budget(self.budget_setting_bytes)
        where = "in place (local root)" if self.in_place else f"cache {budget}"
        if self.budget_bytes < self.budget_setting_bytes:
            where += f" (all its disk can hold; budget {setting})"
        state = "ok" if self.feasible else "INFEASIBLE"
        return (f"{self.dataset}@{self.version[:12]}: {plural(self.units, 'unit')}, "
                f"{plural(self.shards, 'shard')} "
                f"({format_bytes(self.total_bytes)}), {mode}, x{self.consumers}, resident "
                f"{format_bytes(self.resident_bytes)}, {where}: {state}")


def plan_read(
    ctx: ReadContext,
    manifest: Manifest,
    units: Sequence[tuple[int, int]],
    *,
    full_shuffle: bool = False,
    consumers: int = 1,
    prefetch: int | None = None,
    purpose: str = "",
    share: int = 1,
) -> ReadPlan:
    """Plan reading ``units`` of ``manifest`` through ``ctx``'s cache (no network I/O).

    Args:
        ctx: the root and the cache settings.
        manifest: the version read.
        units: the schedule of ``(shard, row_group)`` units of one consumer (or all of them).
        full_shuffle: every shard of the schedule must be resident at once (shared by the
            consumers, so counted once).
        consumers: readers on this machine sharing the cache, each with its own window.
        prefetch: shards fetched ahead per consumer; None sizes it from the budget.
        purpose: what needs every shard resident when it is not a full shuffle (``pull``,
            ``to_polars``, ``sql``): named in the error, with the alternatives that stream.
        share: sources read at once with this one (a mix of two: 2); the window is sized
            from ``1/share`` of the budget.

    Returns:
        The :class:`ReadPlan`; call ``.check()`` to raise when it does not fit.
    """
    check_bool("plan", "full_shuffle", full_shuffle)
    entries = manifest.shards
    order = schedule_shards(units)
    sizes = [entries[i].bytes for i in order]
    budget, setting = budgets_of(ctx)
    digests: frozenset[str] = frozenset()
    held: dict[str, int] = {}
    if not ctx.in_place:
        digests = frozenset(entries[i].digest for i in order)
        # this process's to_polars() frames keep theirs until dropped: not room (QA nb58)
        held = parked_shards(ctx.cache())
    parked = sum(held.values())
    if held:  # a parked shard of this read needs no room, and keeps its own once read
        sizes = [0 if entries[i].digest in held else entries[i].bytes for i in order]
    window = choose_window(sizes, max(0, budget - parked) // max(1, share),
                           consumers=consumers, prefetch=prefetch,
                           max_prefetch=DEFAULT_PREFETCH)
    resident = cached = evictable = held_now = 0
    # (QA user58: two workers were refused a budget above the whole dataset. Every shard of
    # the version, not this consumer's: ranks reading other blocks hold others; QA review58b)
    every = sum(s.bytes for s in entries)
    reasons: list[str] = []
    if ctx.in_place:
        free = free_disk(ctx.cache_dir)
    else:
        if full_shuffle:
            resident = full_resident_bytes(sizes)
        else:  # consumers share the machine's cache: never more than every shard of the
            resident = min(consumers * window_resident_bytes(sizes, window), every)  # version
        cache = ctx.cache()
        cached = cache.cached_bytes((entries[i].digest, entries[i].bytes) for i in order)
        free = cache.free_disk()
        if resident - cached > free:  # (a scan of the cache: only when the disk is short)
            evictable, held_now = cache.evictable_bytes(digests)
        while (prefetch is None and not full_shuffle and window > 1  # an automatic window:
               and resident - cached > (free + evictable) // max(1, share)):  # the disk's
            window -= 1  # room, shared by the sources read at once (held shards: not room)
            resident = min(consumers * window_resident_bytes(sizes, window), every)
        # Shards other readers hold are room once they let go: the read waits for it, as
        # under the budget, rather than being refused (QA sharedcache63)
        reasons = reasons_for(resident, cached, (budget, setting), free, full_shuffle, consumers,
                              window, purpose, evictable + held_now)
        if parked and not reasons and resident + parked > budget:
            reasons.append(f"this process's to_polars() frames hold {format_bytes(parked)} of "
                           f"the cache's {fmt_budget(budget)}, leaving "
                           f"{format_bytes(budget - parked)} for the "
                           f"{format_bytes_up(resident)} it needs resident")
    whole = [entries[i].bytes for i in order]
    return ReadPlan(
        dataset=manifest.name, version=manifest.version, units=len(units), shards=len(order),
        total_bytes=sum(whole), max_shard_bytes=max(whole, default=0), window_shards=window,
        consumers=consumers, full_shuffle=full_shuffle, in_place=ctx.in_place,
        resident_bytes=resident, cached_bytes=cached, budget_bytes=budget,
        free_disk_bytes=free, cache_dir=ctx.cache_dir, reasons=tuple(reasons), purpose=purpose,
        budget_setting_bytes=setting, evictable_bytes=evictable, digests=digests,
        parked_bytes=parked,
    )
