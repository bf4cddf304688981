"""Sources that are not datasets: ``random_stream``, and ``from_iterable`` (in
:mod:`dload_arrow.pipeline.iterables`, re-exported here).

``random_stream(seed)`` is counter-based: the value at position ``p`` is drawn from block
``p // 4096`` of a generator seeded by ``(seed, epoch, block)``, so any position is reachable
without drawing the ones before it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk
from dload_arrow.pipeline.integers import integer
from dload_arrow.pipeline.iterables import FromIterablePipe, from_iterable
from dload_arrow.pipeline.node import POSITION, Node, State
from dload_arrow.plan.seeds import check_seed, rng

__all__ = ["FromIterablePipe", "RandomStreamPipe", "from_iterable", "random_stream"]

_RANDOM_BLOCK = 4096  # rows drawn at once, at most _RANDOM_VALUES values in all
_RANDOM_VALUES = 1 << 20
_MAX_SIZE = 1 << 31  # values per item


def random_stream(seed: int, *, high: int | None = None, size: int | None = None) -> Pipeline:
    """An endless stream of uniform floats in ``[0, 1)`` (or ints in ``[0, high)``).

    ``size`` makes each item a numpy vector of that many values (up to 2**31). ``high`` is
    at most 2**63. Deterministic in ``(seed, epoch, position)``; skips without drawing.
    """
    return RandomStreamPipe(seed, high, size)


class RandomStreamPipe(Pipeline):
    op = "random_stream"

    def __init__(self, seed: int, high: int | None, size: int | None) -> None:
        super().__init__()
        ints: list[int | None] = []
        for what, v, top in (("high", high, 1 << 63), ("size", size, _MAX_SIZE)):
            n = None if v is None else integer(v)
            if v is not None and (n is None or n < 1):
                raise ConfigError(f"random_stream: {what} must be an int >= 1 (or None), got "
                                  f"{v!r}")
            if n is not None and n > top:
                raise ConfigError(f"random_stream: {what} must be at most {top:,} (values are "
                                  f"int64 and float64 numpy arrays), got {n:,}")
            ints.append(n)
        self.seed, (self.high, self.size) = check_seed(seed), ints

    def _params(self) -> dict[str, Any]:
        params = {"seed": self.seed, "high": self.high, "size": self.size}
        rows = _block_rows(self.size)
        if rows != _RANDOM_BLOCK:  # wide items drawn in smaller blocks (since stop 26): other
            params["rows"] = rows  # values, so another fingerprint than before
        return params

    @property
    def finite(self) -> bool:
        return False

    @property
    def endless(self) -> bool:
        return True

    def _build(self, epoch: int) -> Node:
        return _RandomNode(self.seed, epoch, self.high, self.size)


def _block_rows(size: int | None) -> int:
    """Rows drawn at once: 4,096, fewer for wide items (at most _RANDOM_VALUES values)."""
    return max(1, min(_RANDOM_BLOCK, _RANDOM_VALUES // (size or 1)))


class _RandomNode(Node):
    cheap_skip = True

    def __init__(self, seed: int, epoch: int, high: int | None, size: int | None) -> None:
        self.seed, self.epoch, self.high, self.size = seed, epoch, high, size
        self.p = 0

    def reset(self, state: State | None = None) -> None:
        self.p = 0 if state is None else int(state[POSITION])

    def get_state(self) -> State:
        return {POSITION: self.p}

    def next(self) -> Chunk:
        width = self.size or 1
        rows = _block_rows(self.size)
        block, off = divmod(self.p, rows)
        g = rng(self.seed, self.epoch, "random_stream", block)
        values: np.ndarray = (
            g.integers(0, self.high, size=(rows, width)) if self.high is not None
            else g.random((rows, width))
        )
        values = values[off:]
        self.p += len(values)
        if self.size is None:
            return values[:, 0].tolist()
        return list(values)

    def skip(self, n: int) -> int:
        self.p += n
        return n
