"""Look-ahead windows: how many shards each consumer keeps on local disk. Pure, no I/O.

A consumer reading a schedule of shards holds the shard it is reading plus the shards being
fetched ahead of it: its *window*. The cache must hold every consumer's window at once, so the
window is the largest one (capped by ``max_prefetch``) whose worst case (the ``window`` largest
shards of the schedule) times the number of consumers fits the budget. A full shuffle instead
needs every shard of the schedule resident at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dload_arrow.args import check_count
from dload_arrow.errors import ConfigError

__all__ = [
    "DEFAULT_PREFETCH",
    "UNLIMITED",
    "choose_window",
    "full_resident_bytes",
    "window_resident_bytes",
]

DEFAULT_PREFETCH = 4
"""Shards fetched ahead of the one being read when the budget allows and none is asked for."""

UNLIMITED = 2**63 - 1
"""A budget of ``unlimited``, as bytes."""


def _sizes(shard_bytes: Sequence[int]) -> np.ndarray:
    arr = np.asarray(list(shard_bytes), dtype=np.int64)
    if arr.size and int(arr.min()) < 0:
        raise ConfigError(f"shard sizes must not be negative, got {int(arr.min())}")
    return arr


def window_resident_bytes(shard_bytes: Sequence[int], window: int) -> int:
    """Worst-case bytes one consumer keeps resident with a window of ``window`` shards.

    That is the sum of the ``window`` largest sizes: whichever shards happen to be in the
    window, they never weigh more.

    Args:
        shard_bytes: sizes of the distinct shards of the schedule.
        window: shards resident at once (the one being read plus those fetched ahead).
    """
    if window < 0:
        raise ConfigError(f"window must not be negative, got {window}")
    sizes = np.sort(_sizes(shard_bytes))[::-1]
    return int(sizes[:window].sum())


def full_resident_bytes(shard_bytes: Sequence[int]) -> int:
    """Bytes a full shuffle keeps resident: every shard of the schedule."""
    return int(_sizes(shard_bytes).sum())


def choose_window(
    shard_bytes: Sequence[int],
    budget: int,
    *,
    consumers: int = 1,
    prefetch: int | None = None,
    max_prefetch: int = DEFAULT_PREFETCH,
) -> int:
    """Shards each consumer keeps resident: the one it reads plus those fetched ahead.

    With ``prefetch`` given the window is ``prefetch + 1`` (at most the number of shards),
    whether or not it fits: the planner reports a misfit rather than silently shrinking an
    explicit request. Without it, the window is the largest in ``1 .. max_prefetch + 1`` that
    fits ``consumers`` times into ``budget``, and 1 when not even that fits (the planner then
    reports the plan as infeasible).

    Args:
        shard_bytes: sizes of the distinct shards of one consumer's schedule.
        budget: cache budget in bytes shared by all consumers of the machine.
        consumers: readers sharing the cache (processes x streams).
        prefetch: shards to fetch ahead, or None to size from the budget.
        max_prefetch: upper bound on the look-ahead when sizing from the budget.

    Returns:
        The window in shards; 0 only for an empty schedule.
    """
    consumers = check_count("", "consumers", consumers, low=1)
    if prefetch is not None:
        prefetch = check_count("", "prefetch", prefetch)
    sizes = np.sort(_sizes(shard_bytes))[::-1]
    n = int(sizes.size)
    if n == 0:
        return 0
    if prefetch is not None:
        return min(prefetch + 1, n)
    cum = np.cumsum(sizes[: min(max(max_prefetch, 0) + 1, n)]) * consumers
    fits = int(np.searchsorted(cum, budget, side="right"))
    return max(1, fits)
