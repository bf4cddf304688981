"""``check()``: will this pipeline fit the machine? Answered with no I/O (invariant 5).

Each dataset source becomes a read plan (:func:`dload_arrow.read.planner.plan_read`) for its
mode (full shuffle: the whole view resident; otherwise a sliding window per consumer); the
plans of sources read at once are summed against one cache (``check_plans``). The report
lists the sources, the resident set, the budget and the verdict; ``iter()`` raises
InfeasiblePlanError with the same text when it does not fit.

**Sources read at once share the budget.** ``mix``, ``choice`` and ``zip_with`` read all their
inputs at the same time, ``concat`` one after the other (:func:`sources_at_once`). Each
source's window is sized from its share of the cache budget, in the check and when the
pipeline runs (:func:`sharing_budget` around the build, :func:`budget_share` in the source),
so that two datasets that each fit half the cache mix within it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dload_arrow.args import check_count
from dload_arrow.errors import InfeasiblePlanError

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["CheckReport", "SourceInfo", "budget_share", "check_pipeline", "sharing_budget",
           "sources_at_once"]

_SHARE: ContextVar[int] = ContextVar("dload_budget_share", default=1)


def budget_share() -> int:
    """Dataset sources of the pipeline being built that read at once (each gets 1/n of the
    cache budget for its window)."""
    return _SHARE.get()


@contextmanager
def sharing_budget(n: int) -> Iterator[None]:
    """Build nodes whose sources share the cache budget ``n`` ways."""
    token = _SHARE.set(max(1, n))
    try:
        yield
    finally:
        _SHARE.reset(token)


def sources_at_once(pipe: Pipeline) -> int:
    """The most dataset sources of ``pipe`` read at the same time."""
    from dload_arrow.pipeline.combine import ZipPipe
    from dload_arrow.pipeline.dataset import DatasetPipe
    from dload_arrow.pipeline.router import RouterPipe

    if isinstance(pipe, DatasetPipe):
        return 1
    kids = [sources_at_once(c) for c in pipe._children]
    if isinstance(pipe, ZipPipe | RouterPipe):
        return sum(kids)
    return max(kids, default=0)


@dataclass(frozen=True)
class SourceInfo:
    """One dataset source of a pipeline, as planned."""

    dataset: str
    version: str
    order: str
    rows: int
    units: int
    window_rows: int


@dataclass(frozen=True)
class CheckReport:
    """Sources, resident bytes, budget and verdict of a pipeline on this machine."""

    sources: tuple[SourceInfo, ...]
    report: Any  # dload_arrow.read.planner.PlanReport, or None without dataset sources
    finite: bool

    @property
    def feasible(self) -> bool:
        return self.report is None or bool(self.report.feasible)

    @property
    def resident_bytes(self) -> int:
        return 0 if self.report is None else int(self.report.resident_bytes)

    @property
    def budget_bytes(self) -> int | None:
        return None if self.report is None else int(self.report.budget_bytes)

    @property
    def message(self) -> str:
        return "" if self.report is None else str(self.report.message)

    def raise_if_infeasible(self) -> CheckReport:
        if not self.feasible:
            raise InfeasiblePlanError(self.message)
        return self

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython/Jupyter: str()
        p.text(str(self))

    def __str__(self) -> str:
        lines = [f"pipeline: {len(self.sources)} dataset source(s), "
                 f"{'finite' if self.finite else 'endless'}"]
        for s in self.sources:
            lines.append(f"  {s.dataset}@{s.version[:12]}: {s.order}, {s.rows} rows in "
                         f"{s.units} units, window {s.window_rows} rows")
        if self.report is not None:
            lines.append(str(self.report))
        lines.append("verdict: " + ("ok" if self.feasible else "INFEASIBLE"))
        return "\n".join(lines)


def check_pipeline(pipe: Pipeline, consumers: int = 1) -> CheckReport:
    """Plan every dataset source of ``pipe`` for ``consumers`` readers on this machine."""
    from dload_arrow.read.planner import check_plans, plan_read

    consumers = check_count("check", "consumers", consumers, low=1)
    infos, plans = [], []
    ctx = None
    share = max(1, sources_at_once(pipe))
    for src in pipe.sources():
        plan = src.plan(0)
        starts = plan.window_starts
        window = int((starts[1:] - starts[:-1]).max()) if len(starts) > 1 else 0
        infos.append(SourceInfo(src.name, src.version, src.order, plan.num_rows,
                                len(src.units), window))
        ctx = src.ds.context
        plans.append(plan_read(ctx, src.ds.manifest, src.units,
                               full_shuffle=src.order == "full", consumers=consumers,
                               share=share))
    report = check_plans(ctx, plans, at_once=share) if plans and ctx is not None else None
    return CheckReport(tuple(infos), report, pipe.finite)
