"""Shuffle quality, measured: how far an order is from a uniform random permutation.

:func:`shuffle_quality` reports three statistics of an order (the sequence of source row
numbers an epoch delivers) next to their expected values under a uniform permutation:

- mean displacement ``|position - row| / n``: uniform reference ``(n^2 - 1) / (3 n^2)``
  (~1/3), standard deviation from the Spearman footrule variance ``(n+1)(2n^2+7)/45``;
- same-shard adjacency, the fraction of consecutive items from one shard: uniform reference
  ``sum_s n_s (n_s - 1) / (n (n - 1))``;
- Spearman rank correlation between position and row: uniform reference 0, sd
  ``1 / sqrt(n - 1)``.

Each comes with a z-score; a windowed shuffle shows a small displacement and a high
adjacency, a full shuffle sits at the references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError

__all__ = ["Metric", "ShuffleQuality", "shuffle_quality"]


@dataclass(frozen=True)
class Metric:
    """One statistic beside its expected value and spread under a uniform permutation."""

    name: str
    value: float
    uniform: float
    uniform_sd: float

    @property
    def z(self) -> float:
        """Standard deviations from the uniform reference (0 when the sd is 0)."""
        return 0.0 if self.uniform_sd == 0 else (self.value - self.uniform) / self.uniform_sd


@dataclass(frozen=True)
class ShuffleQuality:
    """The report of :func:`shuffle_quality`."""

    n: int
    displacement: Metric
    adjacency: Metric | None
    rank_correlation: Metric

    @property
    def metrics(self) -> list[Metric]:
        return [m for m in (self.displacement, self.adjacency, self.rank_correlation) if m]

    def looks_uniform(self, z: float = 4.0) -> bool:
        """True when every metric is within ``z`` standard deviations of its reference."""
        return all(abs(m.z) <= z for m in self.metrics)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython/Jupyter: str()
        p.text(str(self))

    def __str__(self) -> str:
        width = max(len("metric"), *(len(m.name) for m in self.metrics)) + 2
        lines = [f"shuffle quality over {self.n} items",
                 f"{'metric':<{width}}{'value':>8}  {'uniform':>8} {'z':>7}"]
        for m in self.metrics:
            lines.append(f"{m.name:<{width}}{m.value:>8.4f}  {m.uniform:>8.4f} {m.z:>7.1f}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {m.name: {"value": m.value, "uniform": m.uniform, "uniform_sd": m.uniform_sd,
                         "z": m.z} for m in self.metrics}


def shuffle_quality(
    order: np.ndarray, n: int | None = None, shard_of: np.ndarray | None = None
) -> ShuffleQuality:
    """Measure an order against the uniform references.

    Args:
        order: the row number (0..n-1 in source order) delivered at each position; a
            permutation of ``range(n)`` (a prefix of one is accepted: it is ranked).
        n: the number of rows (default ``len(order)``).
        shard_of: the shard of each row (``shard_of[row]``), for same-shard adjacency.

    Returns:
        A :class:`ShuffleQuality` with displacement, adjacency and rank correlation.
    """
    raw = np.asarray(order)
    if raw.ndim != 1 or (raw.size and raw.dtype.kind not in "iu"):
        raise ConfigError(f"shuffle_quality needs a 1-D array of row numbers (ints), got "
                          f"{raw.dtype} of shape {raw.shape}")
    order = raw.astype(np.int64)
    m = len(order)
    if m < 2:
        raise ConfigError(f"shuffle_quality needs at least 2 items, got {m}")
    n = m if n is None else int(n)
    if len(np.unique(order)) != m or order.min() < 0 or order.max() >= n:
        raise ConfigError(
            f"shuffle_quality needs distinct row numbers in 0..{n - 1} (a permutation of "
            f"range(n), or a prefix of one); got {m} values in {order.min()}..{order.max()} "
            f"with {m - len(np.unique(order))} repeated. Pass n= for a prefix of a longer order"
        )
    # Ranks make a prefix or subset comparable to a permutation of range(m).
    ranks = np.empty(m, dtype=np.int64)
    ranks[np.argsort(order, kind="stable")] = np.arange(m)
    pos = np.arange(m)
    disp = float(np.abs(ranks - pos).mean() / m)
    disp_ref = (m * m - 1) / (3.0 * m * m)
    disp_sd = math.sqrt((m + 1) * (2 * m * m + 7) / 45.0) / (m * m)
    displacement = Metric("displacement", disp, disp_ref, disp_sd)

    rho = float(1 - 6 * np.sum((ranks - pos).astype(np.float64) ** 2) / (m * (m * m - 1)))
    rank = Metric("rank_correlation", rho, 0.0, 1 / math.sqrt(m - 1))

    adjacency = None
    if shard_of is not None:
        shard_of = np.asarray(shard_of)
        if len(shard_of) < n:
            raise ConfigError(f"shard_of has {len(shard_of)} entries for {n} rows")
        s = shard_of[order]
        same = float(np.mean(s[1:] == s[:-1]))
        _, counts = np.unique(shard_of[:n], return_counts=True)
        ref = float(np.sum(counts * (counts - 1)) / (n * (n - 1)))
        sd = math.sqrt(max(ref * (1 - ref), 1e-12) / (m - 1))
        adjacency = Metric("same_shard_adjacent", same, ref, sd)
    return ShuffleQuality(m, displacement, adjacency, rank)
