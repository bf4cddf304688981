"""Sample orders: pure functions ``(sizes, seed, epoch, ...) -> numpy array``.

Every order an epoch uses is computed here from row counts and seeds, with no I/O, so the order
of an epoch is a pure function of (source versions, pipeline, seed, epoch) and a checkpoint is
just a position into it. One algorithm per function:

- :func:`unit_order`: shards permuted, then row groups permuted within each shard.
- :func:`cut_windows`: consecutive units grouped so each window holds about ``buffer`` rows.
- :func:`window_permutation`: the permutation of the rows of one window.
- :class:`SamplePlan`: position -> (unit, row) for sequential, windowed and full orders.
- :func:`mix_uniforms` / :func:`exact_pattern` / :func:`apportion`: the draws behind ``mix``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError
from dload_arrow.plan.seeds import rng

__all__ = [
    "MIX_BLOCK",
    "ORDERS",
    "SamplePlan",
    "apportion",
    "cut_windows",
    "exact_pattern",
    "mix_uniforms",
    "own_count",
    "own_position",
    "unit_order",
    "window_permutation",
]

ORDERS = ("sequential", "windowed", "full")
MIX_BLOCK = 4096


def unit_order(unit_shards: np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """Indices of units in epoch order: shard order permuted, row groups permuted inside shards.

    Args:
        unit_shards: the shard index of each unit, units in canonical order.
        seed: the user's seed.
        epoch: the epoch number.
    """
    unit_shards = np.asarray(unit_shards, dtype=np.int64)
    if unit_shards.size == 0:
        return np.zeros(0, dtype=np.int64)
    shards, inverse = np.unique(unit_shards, return_inverse=True)
    shard_perm = rng(seed, epoch, "shard-order").permutation(len(shards))
    out = []
    for s in shard_perm:
        members = np.flatnonzero(inverse == s)
        out.append(members[rng(seed, epoch, "rg-order", int(shards[s])).permutation(len(members))])
    return np.concatenate(out).astype(np.int64)


def cut_windows(rows: np.ndarray, buffer: int) -> np.ndarray:
    """Window boundaries (unit indices, first 0, last ``len(rows)``): greedy, >= ``buffer`` rows.

    A window closes as soon as it holds at least ``buffer`` rows, so every window but the last
    holds between ``buffer`` and ``buffer + max(rows) - 1`` rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if buffer < 1:
        raise ConfigError(f"shuffle buffer must be at least 1 row, got {buffer}")
    bounds = [0]
    acc = 0
    for i, r in enumerate(rows.tolist()):
        acc += r
        if acc >= buffer:
            bounds.append(i + 1)
            acc = 0
    if bounds[-1] != len(rows):
        bounds.append(len(rows))
    return np.asarray(bounds, dtype=np.int64)


def window_permutation(n: int, seed: int, epoch: int, window: int) -> np.ndarray:
    """The permutation of the ``n`` rows of window ``window`` in ``epoch``."""
    return rng(seed, epoch, "window", window).permutation(n).astype(np.int64)


@dataclass
class SamplePlan:
    """An epoch's sample order over units: a pure map from position to (unit, row).

    Attributes:
        order: unit indices (into the caller's unit list) in epoch order.
        unit_rows: rows of each unit in epoch order (``rows[order]``).
        window_bounds: window boundaries in epoch-order unit positions.
        mode: ``sequential``, ``windowed`` or ``full``.
        seed, epoch: what the permutations derive from.
    """

    order: np.ndarray
    unit_rows: np.ndarray
    window_bounds: np.ndarray
    mode: str
    seed: int
    epoch: int
    unit_starts: np.ndarray = field(init=False)
    window_starts: np.ndarray = field(init=False)
    _perms: dict[int, np.ndarray] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.unit_starts = np.concatenate([[0], np.cumsum(self.unit_rows)]).astype(np.int64)
        self.window_starts = self.unit_starts[self.window_bounds]

    @classmethod
    def build(
        cls,
        unit_shards: np.ndarray,
        rows: np.ndarray,
        mode: str = "sequential",
        *,
        seed: int = 0,
        epoch: int = 0,
        buffer: int | None = None,
    ) -> SamplePlan:
        """Plan one epoch over units with ``rows`` rows each (canonical order)."""
        rows = np.asarray(rows, dtype=np.int64)
        n = len(rows)
        if mode == "sequential":
            order = np.arange(n, dtype=np.int64)
            bounds = np.arange(n + 1, dtype=np.int64)
        elif mode == "windowed":
            order = unit_order(unit_shards, seed, epoch)
            bounds = cut_windows(rows[order], buffer or 1)
        elif mode == "full":
            order = np.arange(n, dtype=np.int64)
            bounds = np.asarray([0, n] if n else [0], dtype=np.int64)
        else:
            raise ConfigError(f"unknown order {mode!r}; choose one of {ORDERS}")
        return cls(order, rows[order], bounds, mode, seed, epoch)

    @property
    def num_rows(self) -> int:
        return int(self.unit_starts[-1])

    @property
    def num_windows(self) -> int:
        return len(self.window_bounds) - 1

    def perm(self, window: int) -> np.ndarray | None:
        """The row permutation of a window (None: rows in order)."""
        if self.mode == "sequential":
            return None
        p = self._perms.get(window)
        if p is None:
            n = int(self.window_starts[window + 1] - self.window_starts[window])
            p = window_permutation(n, self.seed, self.epoch, window)
            self._perms = {window: p}  # one window at a time: the state never grows
        return p

    def window_of(self, position: int) -> int:
        return int(np.searchsorted(self.window_starts, position, side="right") - 1)

    def window_units(self, window: int) -> np.ndarray:
        """Epoch-order unit positions of a window."""
        return np.arange(self.window_bounds[window], self.window_bounds[window + 1])

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(epoch-order unit position, row in unit) of each position (all in one window)."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size == 0:
            return positions, positions
        w = self.window_of(int(positions[0]))
        start = int(self.window_starts[w])
        p = self.perm(w)
        local = positions - start
        g = start + (p[local] if p is not None else local)
        u = np.searchsorted(self.unit_starts, g, side="right") - 1
        return u.astype(np.int64), (g - self.unit_starts[u]).astype(np.int64)

    def order_array(self) -> np.ndarray:
        """Every position's canonical row index (``row_offset`` of its unit + row): for stats."""
        canon_starts = np.concatenate([[0], np.cumsum(self.unit_rows[np.argsort(self.order)])])
        out = np.empty(self.num_rows, dtype=np.int64)
        for w in range(self.num_windows):
            a, b = int(self.window_starts[w]), int(self.window_starts[w + 1])
            u, r = self.locate(np.arange(a, b))
            out[a:b] = canon_starts[self.order[u]] + r
        return out


def own_count(p: Any, index: int, count: int, block: int) -> Any:
    """How many positions below ``p`` belong to shard ``index`` of ``count`` (arrays too).

    Shard ``index`` owns positions ``q`` with ``(q // block) % count == index``.
    """
    if count == 1:
        return p
    if isinstance(p, (int, np.integer)):  # a scalar: plain arithmetic, 10x faster than numpy's
        full_, rem_ = divmod(int(p), count * block)
        return full_ * block + min(max(rem_ - index * block, 0), block)
    full, rem = np.divmod(p, count * block)
    return full * block + np.clip(rem - index * block, 0, block)


def own_position(k: Any, index: int, count: int, block: int) -> Any:
    """The position of the ``k``-th item of shard ``index`` (inverse of :func:`own_count`)."""
    if count == 1:
        return k
    if isinstance(k, (int, np.integer)):
        b_, off_ = divmod(int(k), block)
        return b_ * count * block + index * block + off_
    b, off = np.divmod(k, block)
    return b * count * block + index * block + off


def apportion(weights: np.ndarray, total: int) -> np.ndarray:
    """Integer counts summing to ``total`` closest to ``weights * total`` (largest remainder)."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    exact = w * total
    counts = np.floor(exact).astype(np.int64)
    rest = total - int(counts.sum())
    if rest:
        frac = exact - counts
        # stable: ties go to the lower index
        counts[np.argsort(-frac, kind="stable")[:rest]] += 1
    return counts


def exact_pattern(
    weights: np.ndarray, window: int, seed: int, epoch: int, index: int
) -> np.ndarray:
    """Source index of each slot of mix window ``index``: apportioned counts, shuffled."""
    counts = apportion(weights, window)
    pattern = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    return pattern[rng(seed, epoch, "mix-exact", index).permutation(window)]


def mix_uniforms(seed: int, epoch: int, block: int) -> np.ndarray:
    """``MIX_BLOCK`` uniforms for slots ``[block * MIX_BLOCK, (block + 1) * MIX_BLOCK)``."""
    return rng(seed, epoch, "mix", block).random(MIX_BLOCK)
