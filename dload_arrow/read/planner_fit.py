"""Why a read plan does not fit this machine: the budget in effect, the reasons and which
limit is short (the configured budget or the cache's disk), for :mod:`~dload_arrow.read.planner`.
"""

from __future__ import annotations

from typing import Any, Self

from dload_arrow.errors import InfeasiblePlanError
from dload_arrow.plan.window import UNLIMITED
from dload_arrow.read.context import ReadContext
from dload_arrow.sizes import BUDGET_WAYS, format_bytes, format_bytes_up

__all__ = ["ALTERNATIVES", "Verdict", "budgets_of", "disk_short", "fmt_budget", "fmt_need",
           "reasons_for"]


def fmt_budget(n: int) -> str:
    """A budget for people: bytes, or 'unlimited'."""
    return "unlimited" if n >= UNLIMITED else format_bytes(n)


def fmt_need(n: int) -> str:
    """A size needed, rounded up: typed back as a budget, it suffices."""
    return "unlimited" if n >= UNLIMITED else format_bytes_up(n)


def budgets_of(ctx: ReadContext) -> tuple[int, int]:
    """The budget in effect (never more than the cache's disk can hold) and the configured
    one."""
    if ctx.in_place:
        return UNLIMITED, UNLIMITED
    cache = ctx.cache()
    return cache.limit(), cache.budget_bytes


def disk_short(resident: int, cached: int, budget: int, setting: int, free: int) -> bool:
    """Whether the disk, not the budget, is what the resident set does not fit (``free``:
    the free disk plus the other cached shards the cache may evict for it)."""
    return (setting >= resident > budget) or resident - cached > free


ALTERNATIVES = {
    "pull": "read it without pulling: reading streams through the cache window",
    "to_polars": "use to_arrow(), to_pandas() or batches(), which stream through the "
                 "cache window",
    "sql": "filter with ds.where(...) and read with to_arrow() or batches(), which stream "
           "through the cache window",
}


def reasons_for(resident: int, cached: int, budgets: tuple[int, int], free: int,
                full_shuffle: bool, consumers: int, window: int, purpose: str = "",
                evictable: int = 0) -> list[str]:
    """Why ``resident`` bytes do not fit ``budgets`` (in effect, configured) and the disk:
    its ``free`` bytes, and ``evictable`` bytes of other cached shards it may evict."""
    what = (f"every shard at once, for {purpose}" if full_shuffle and purpose
            else "the whole schedule for a full shuffle" if full_shuffle
            else f"{consumers} consumer(s) x a window of {window} shard(s)")
    budget, setting = budgets
    out = []
    if resident > setting:  # the figure of the plan's table; exact where it reads as equal
        need = format_bytes_up(resident)  # as the fix's "at least" says it (QA user58)
        if need == fmt_budget(setting):
            need = f"{resident:,} bytes"
        out.append(f"it needs {need} resident ({what}) but the cache budget is "
                   f"{fmt_budget(setting)}")
    if resident - cached > free + evictable:
        also = (f" (and the cache's other shards hold {format_bytes(evictable)}, evicted "
                "once no reader holds them)" if evictable else "")
        out.append(f"it needs {format_bytes_up(resident - cached)} more on disk but only "
                   f"{format_bytes(free)} are free{also}")
    elif setting >= resident > budget:
        out.append(f"it needs {format_bytes(resident)} resident ({what}) but the cache can "
                   f"hold at most {format_bytes(budget)} on its disk (what it holds plus the "
                   f"{format_bytes(free)} free, less a small reserve)")
    return out


class Verdict:
    """What a read plan and a report of several share: the reasons it does not fit, the
    fixes that apply, and :meth:`check`. A subclass (a frozen dataclass) has the fields used
    here and gives its ``message``."""

    reasons: tuple[str, ...]
    resident_bytes: int
    cached_bytes: int
    budget_bytes: int
    budget_setting_bytes: int
    free_disk_bytes: int
    evictable_bytes: int

    @property
    def feasible(self) -> bool:
        return not self.reasons

    @property
    def message(self) -> str:
        raise NotImplementedError

    def check(self) -> Self:
        """Return this, or raise InfeasiblePlanError with the numbers and the fixes."""
        if self.reasons:
            raise InfeasiblePlanError(self.message)
        return self

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython/Jupyter: str()
        p.text(str(self))

    def _budget_fix(self) -> list[str]:
        """'raise the cache budget', when the configured budget is what is short."""
        need = self.resident_bytes + getattr(self, "parked_bytes", 0)  # (read/parked.py)
        if need <= self.budget_setting_bytes:
            return []
        return [f"raise the cache budget to at least {fmt_need(need)} "
                f"({BUDGET_WAYS}; or 'unlimited')"]

    def _disk_short(self) -> bool:
        """Whether the cache's disk is short (with what eviction could free counted)."""
        return disk_short(self.resident_bytes, self.cached_bytes, self.budget_bytes,
                          self.budget_setting_bytes,
                          self.free_disk_bytes + self.evictable_bytes)
