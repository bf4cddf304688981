"""The read layer: the machine-wide cache, read plans, the fetcher, the reader, random access.

Public entry points (the rest is internal):

- :func:`~dload_arrow.read.reader.iter_units`: one RecordBatch per (shard, row group) unit.
- :func:`~dload_arrow.read.planner.plan_read`, :func:`~dload_arrow.read.planner.check_plans`:
  feasibility before any I/O.
- :class:`~dload_arrow.read.cache.Cache`: shards on local disk within a byte budget.
- :class:`~dload_arrow.read.context.ReadContext`: the root plus the cache settings.
"""

from __future__ import annotations

from dload_arrow.read.cache import Cache, CacheEntry, Hold
from dload_arrow.read.context import ReadContext
from dload_arrow.read.planner import PlanReport, ReadPlan, check_plans, plan_read
from dload_arrow.read.reader import all_units, iter_units
from dload_arrow.read.samples import batch_to_samples, iter_samples

__all__ = [
    "Cache",
    "CacheEntry",
    "Hold",
    "PlanReport",
    "ReadContext",
    "ReadPlan",
    "all_units",
    "batch_to_samples",
    "check_plans",
    "iter_samples",
    "iter_units",
    "plan_read",
]
