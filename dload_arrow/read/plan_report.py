"""Several read plans on one machine: their resident sets summed against its cache budget and
free disk (:func:`check_plans`), and the report that says what does not fit and what to change
(:class:`PlanReport`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.cache_space import free_disk
from dload_arrow.read.context import ReadContext
from dload_arrow.read.planner_fit import Verdict, budgets_of, fmt_budget
from dload_arrow.sizes import format_bytes

if TYPE_CHECKING:
    from dload_arrow.read.planner import ReadPlan

__all__ = ["PlanReport", "check_plans"]


@dataclass(frozen=True)
class PlanReport(Verdict):
    """Several plans sharing one machine: their resident sets summed against budget and disk."""

    plans: tuple[ReadPlan, ...]
    budget_bytes: int
    free_disk_bytes: int
    resident_bytes: int
    cached_bytes: int
    reasons: tuple[str, ...]
    budget_setting_bytes: int = UNLIMITED  # configured; budget_bytes is what the disk allows
    together: bool = False  # several sources read at once, refused for their sum
    evictable_bytes: int = 0  # other cached shards the cache may evict for these plans

    @property
    def message(self) -> str:
        if not self.reasons:
            return ""
        head = ("the sources do not fit this machine together: " if self.together
                else "this source does not fit this machine: " if len(self.plans) == 1
                else "a source does not fit this machine: ")
        return (head + "; ".join(self.reasons)
                + ". Fixes: " + "; ".join(self._fixes()) + "\n" + str(self))

    # IPython looks for it before the dataclass's __repr__, in this class's own dict
    _repr_pretty_ = Verdict._repr_pretty_

    def _fixes(self) -> list[str]:
        """The fixes that apply to these plans (not a fixed list: no shuffle, no advice on
        shuffles)."""
        fixes = self._budget_fix()
        if any(p.full_shuffle for p in self.plans):
            fixes.append("use a windowed shuffle instead of a full shuffle")
        if self.together:
            fixes.append("read fewer sources at once")
        consumers = max((p.consumers for p in self.plans), default=1)
        if consumers > 1:
            fixes.append(f"run fewer consumers on this machine (now {consumers}: DataLoader "
                         "workers x local ranks)")
        streamed = [p for p in self.plans if not p.full_shuffle]  # a full shuffle holds all
        if any(p.window_shards > 1 for p in streamed):
            fixes.append("lower prefetch (prefetch=0 keeps one shard per consumer)")
        if self._disk_short():
            fixes.append("free disk space under the cache dir or point cache_dir at a bigger "
                         "disk")
        if streamed:
            fixes.append("commit with a smaller shard_size")
        return fixes

    def __str__(self) -> str:
        head = ("source", "shards", "size", "mode", "consumers", "resident", "status")
        rows = [head]
        for p in self.plans:
            mode = ("in place" if p.in_place else "full shuffle" if p.full_shuffle
                    else f"window {p.window_shards}")
            rows.append((f"{p.dataset}@{p.version[:8]}", str(p.shards),
                         format_bytes(p.total_bytes), mode, str(p.consumers),
                         format_bytes(p.resident_bytes), "ok" if p.feasible else "too big"))
        rows.append(("total", "", "", "", "", format_bytes(self.resident_bytes),
                     "ok" if self.feasible else "INFEASIBLE"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
                 for r in rows]
        lines.append(f"cache {fmt_budget(self.budget_bytes)} (its budget, or what its disk can "
                     f"hold if less), free disk "
                     f"{format_bytes(self.free_disk_bytes)}")
        return "\n".join(lines)


def check_plans(ctx: ReadContext, plans: Sequence[ReadPlan],
                at_once: int | None = None) -> PlanReport:
    """Sum the resident sets of ``plans`` against one machine's cache: all of them, or the
    ``at_once`` largest when no more sources than that are read at the same time (a concat
    reads its sources one after the other)."""
    largest = sorted(plans, key=lambda p: p.resident_bytes, reverse=True)[:at_once]
    resident = sum(p.resident_bytes for p in largest)
    cached = sum(p.cached_bytes for p in largest)
    budget, setting = budgets_of(ctx)
    free = free_disk(ctx.cache_dir)
    short = not ctx.in_place and resident - cached > free  # (evictable: a scan of the cache)
    mine = frozenset().union(*(p.digests for p in largest))  # (held or not: not room)
    evictable, held = ctx.cache().evictable_bytes(mine) if short else (0, 0)
    reasons = [f"{p.dataset}: {r}" for p in plans for r in p.reasons]
    together = not reasons and len(largest) > 1
    if not reasons and resident > budget:
        limit = (f"budget is {fmt_budget(budget)}" if resident > setting else
                 f"can hold at most {format_bytes(budget)} on its disk")
        reasons.append(f"{_they(largest)} {format_bytes(resident)} resident but the cache "
                       + limit)
    if not reasons and resident - cached > free + evictable + held:  # (held: room later)
        reasons.append(f"{_they(largest)} {format_bytes(resident - cached)} more on disk but "
                       f"only {format_bytes(free)} are free")
    return PlanReport(tuple(plans), budget, free, resident, cached, tuple(reasons), setting,
                      together and bool(reasons), evictable)


def _they(plans: Sequence[ReadPlan]) -> str:
    return "together they need" if len(plans) > 1 else f"{plans[0].dataset} needs"
