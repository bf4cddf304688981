"""``check()``: will this pipeline fit the machine? Answered with no I/O (invariant 5).

Each dataset source becomes a read plan (:func:`dload_arrow.read.planner.plan_read`) for its
mode (full shuffle: the whole view resident; otherwise a sliding window per consumer); the
plans of sources read at once are summed against one cache (``check_plans``). The report
lists the sources, the resident set, the budget and the verdict; ``iter()`` raises
InfeasiblePlanError with the same text when it does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import InfeasiblePlanError

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["CheckReport", "SourceInfo", "check_pipeline"]


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

    infos, plans = [], []
    ctx = None
    for src in pipe.sources():
        plan = src.plan(0)
        starts = plan.window_starts
        window = int((starts[1:] - starts[:-1]).max()) if len(starts) > 1 else 0
        infos.append(SourceInfo(src.name, src.version, src.order, plan.num_rows,
                                len(src.units), window))
        ctx = src.ds.context
        plans.append(plan_read(ctx, src.ds.manifest, src.units,
                               full_shuffle=src.order == "full", consumers=consumers))
    report = check_plans(ctx, plans) if plans and ctx is not None else None
    return CheckReport(tuple(infos), report, pipe.finite)
