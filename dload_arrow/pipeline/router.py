"""mix, choice and select: outputs routed slot by slot from several pipelines.

``mix``, ``choice`` and ``select`` share one router: slot ``s`` of the output names the source
its item comes from, as a pure function of ``(seed, epoch, s)`` (mix, choice with fixed
probabilities), of ``s`` and the ``s``-th item of a probability stream (choice), or of the
``s``-th item of an index stream (select). The router's state is the slot, which sources are
exhausted, and each source's cursor.

- ``mix(..., exact=False)``: slot ``s`` draws a uniform ``u_s`` and picks by the cumulative
  weights of the sources still running.
- ``mix(..., exact=True)``: slots come in windows of ``window`` slots; each window holds
  exactly the apportioned count of each source (largest remainder), in a seeded order.
- ``stop="first"`` ends at the first slot whose source is exhausted; ``stop="all"`` drops
  exhausted sources (their weight is shared by the others; exact windows skip their slots)
  and ends when all are exhausted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk, chunk_items, concat_chunks
from dload_arrow.pipeline.combine import _check_pipes, _common_schema
from dload_arrow.pipeline.node import (
    CHILDREN,
    CURSOR,
    DONE,
    POSITION,
    ItemCursor,
    Node,
    State,
)
from dload_arrow.plan.orders import MIX_BLOCK, exact_pattern, mix_uniforms

__all__ = ["STOPS", "RouterPipe", "choice", "mix", "select"]

STOPS = ("first", "all")
_OUT_CHUNK = 256


def mix(
    pipes: Sequence[Pipeline],
    weights: Sequence[float] | None = None,
    seed: int = 0,
    *,
    stop: str = "first",
    exact: bool = False,
    window: int | None = None,
) -> Pipeline:
    """Interleave pipelines at random with the given weights (deterministic in seed, epoch).

    Args:
        pipes: the inputs (datasets are accepted as their default pipeline).
        weights: relative weights (default equal).
        seed: the mix's seed.
        stop: ``"first"`` (end with the first exhausted input) or ``"all"``.
        exact: keep the proportions exactly within every window of ``window`` items.
        window: slots per exact window (default: the smallest of 1..1000 that makes every
            ``weight * window`` whole, else 1000).
    """
    pipes = _check_pipes(pipes, "mix")
    w = _weights(weights, len(pipes))
    if stop not in STOPS:
        raise ValueError(f"mix(stop={stop!r}): choose one of {STOPS}")
    win = (window or _exact_window(w)) if exact else None
    if win is not None and win < 1:
        raise ValueError(f"mix window must be >= 1, got {win}")
    return RouterPipe(pipes, "mix", seed=seed, weights=w, stop=stop, window=win)


def choice(pipes: Sequence[Pipeline], p: Sequence[float] | Pipeline, seed: int = 0, *,
           stop: str = "first") -> Pipeline:
    """Each item from input ``i`` with probability ``p[i]``; ``p`` may itself be a pipeline
    yielding one probability vector per item (a schedule that changes over iteration)."""
    pipes = _check_pipes(pipes, "choice")
    if isinstance(p, Pipeline):
        return RouterPipe(pipes, "choice", seed=seed, stop=stop, control=p)
    return RouterPipe(pipes, "choice", seed=seed, weights=_weights(p, len(pipes)), stop=stop)


def select(index: Pipeline, pipes: Sequence[Pipeline], *, stop: str = "first") -> Pipeline:
    """Item ``k`` is the next item of ``pipes[i_k]``, ``i_k`` the ``k``-th item of ``index``.

    Ends when ``index`` ends; when the selected input is exhausted, ``stop="first"`` ends
    too and ``stop="all"`` skips that index item.
    """
    if not isinstance(index, Pipeline):
        raise TypeError(f"select: index must be a Pipeline of ints, got {type(index).__name__}")
    return RouterPipe(_check_pipes(pipes, "select"), "select", stop=stop, control=index)


def _weights(weights: Sequence[float] | None, n: int) -> np.ndarray:
    w = np.ones(n) if weights is None else np.asarray(list(weights), dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(
            f"weights {list(np.atleast_1d(w))} must be {n} finite non-negative numbers with a "
            "positive sum (one per input)"
        )
    return w / w.sum()


def _exact_window(w: np.ndarray) -> int:
    for n in range(1, 1001):
        x = w * n
        if np.all(np.abs(x - np.round(x)) < 1e-9):
            return n
    return 1000


class RouterPipe(Pipeline):
    """mix / choice / select: see the module docstring."""

    op = "router"

    def __init__(self, pipes: Sequence[Pipeline], kind: str, *, seed: int = 0,
                 weights: np.ndarray | None = None, stop: str = "first",
                 window: int | None = None, control: Pipeline | None = None) -> None:
        if stop not in STOPS:
            raise ValueError(f"{kind}(stop={stop!r}): choose one of {STOPS}")
        kids = [*pipes, control] if control is not None else list(pipes)
        super().__init__(*kids)
        self.op = kind
        self.n = len(pipes)
        self.seed, self.weights, self.stop, self.window = seed, weights, stop, window
        self.control = control

    def _params(self) -> dict[str, Any]:
        return {"seed": self.seed, "stop": self.stop, "window": self.window,
                "weights": None if self.weights is None else [float(x) for x in self.weights]}

    @property
    def finite(self) -> bool:
        inputs = [c.finite for c in self._children[: self.n]]
        if self.control is not None and self.control.finite:
            return True
        return any(inputs) if self.stop == "first" else all(inputs)

    def _length(self) -> int | None:
        if self.control is not None or self.stop != "all":
            return None
        ns = [c._length() for c in self._children[: self.n]]
        if any(n is None for n in ns):
            return None
        assert self.weights is not None
        # stop="all" delivers every item of every input that can be drawn (weight > 0)
        return sum(n for n, w in zip(ns, self.weights, strict=True) if n is not None and w > 0)

    def _schema(self) -> pa.Schema | None:
        return _common_schema(self._children[: self.n])

    def _build(self, epoch: int) -> Node:
        kids = [c._build(epoch) for c in self._children[: self.n]]
        ctl = self.control._build(epoch) if self.control is not None else None
        return _RouterNode(self, kids, ctl, epoch)


class _RouterNode(Node):
    def __init__(self, pipe: RouterPipe, kids: list[Node], control: Node | None,
                 epoch: int) -> None:
        self.pipe, self.epoch = pipe, epoch
        self.cursors = [ItemCursor(k) for k in kids]
        self.control = ItemCursor(control) if control is not None else None
        self.slot = 0
        self.done = [False] * len(kids)
        self._block = -1
        self._u = np.zeros(0)
        self._win = -1
        self._pattern = np.zeros(0, dtype=np.int64)
        self.cheap_skip = all(k.cheap_skip for k in kids) and (
            control is None or control.cheap_skip)

    def reset(self, state: State | None = None) -> None:
        self.slot = 0 if state is None else int(state[POSITION])
        self.done = [False] * len(self.cursors) if state is None else list(state[DONE])
        for i, c in enumerate(self.cursors):
            c.reset(None if state is None else state[CHILDREN][i])
        if self.control is not None:
            self.control.reset(None if state is None else state[CURSOR])

    def get_state(self) -> State:
        return {
            POSITION: self.slot, DONE: list(self.done),
            CHILDREN: [c.get_state() for c in self.cursors],
            CURSOR: None if self.control is None else self.control.get_state(),
        }

    def _uniform(self, slot: int) -> float:
        block, off = divmod(slot, MIX_BLOCK)
        if block != self._block:
            self._u, self._block = mix_uniforms(self.pipe.seed, self.epoch, block), block
        return float(self._u[off])

    def _pick(self) -> int | None:
        """The source of the current slot; None when the output ends."""
        pipe = self.pipe
        if self.control is not None:
            got = self.control.take(1)
            if got is None:
                return None
            value = chunk_items(got)[0]
            if pipe.op == "select":
                i = int(value)
                if not 0 <= i < len(self.cursors):
                    raise IndexError(f"select: index {i} at slot {self.slot} is not in "
                                     f"[0, {len(self.cursors)})")
                return i
            return self._by_weights(_weights(list(np.asarray(value, dtype=np.float64)),
                                             len(self.cursors)))
        if pipe.window is not None:
            win, off = divmod(self.slot, pipe.window)
            assert pipe.weights is not None
            if win != self._win:
                self._pattern = exact_pattern(pipe.weights, pipe.window, pipe.seed, self.epoch, win)
                self._win = win
            return int(self._pattern[off])
        assert pipe.weights is not None
        return self._by_weights(pipe.weights)

    def _by_weights(self, w: np.ndarray) -> int | None:
        if self.pipe.stop == "all" and any(self.done):
            w = np.where(self.done, 0.0, w)
            if w.sum() <= 0:
                return None
        cdf = np.cumsum(w / w.sum())
        k = int(np.searchsorted(cdf, self._uniform(self.slot), side="right"))
        return min(k, len(w) - 1)

    def _route(self, take: bool) -> Chunk | int | None:
        """Advance one slot: the item (or 1 when not taking), or None at the end."""
        got = self._route_once(take)
        if got is None:
            self.done = [True] * len(self.done)  # ended: later calls end too
        return got

    def _route_once(self, take: bool) -> Chunk | int | None:
        while True:
            if all(self.done):
                return None
            i = self._pick()
            self.slot += 1
            if i is None:
                return None
            if self.done[i]:
                if self.pipe.stop == "first":
                    return None
                continue
            cur = self.cursors[i]
            got = cur.take(1) if take else (1 if cur.skip(1) == 1 else None)
            if got is not None:
                return got
            self.done[i] = True
            if self.pipe.stop == "first":
                return None

    def next(self) -> Chunk:
        parts: list[Chunk] = []
        while len(parts) < _OUT_CHUNK:
            got = self._route(True)
            if got is None:
                break
            parts.append(got)  # type: ignore[arg-type]
        if not parts:
            raise StopIteration
        return concat_chunks(parts)

    def skip(self, n: int) -> int:
        k = 0
        while k < n and self._route(False) is not None:
            k += 1
        return k

    def prefer_items(self) -> None:
        for c in self.cursors:  # items are picked one at a time: they become Python anyway
            c.child.prefer_items()

    def close(self) -> None:
        for c in self.cursors:
            c.close()
        if self.control is not None:
            self.control.close()

