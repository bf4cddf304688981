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

from dload_arrow.args import check_bool
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.combine import Input, _check_pipes
from dload_arrow.pipeline.common_schema import cast_to, common_schema
from dload_arrow.pipeline.exact_window import exact_window
from dload_arrow.pipeline.integers import integer
from dload_arrow.pipeline.node import Node
from dload_arrow.pipeline.routes import RouterNode, normalized
from dload_arrow.plan.orders import apportion
from dload_arrow.plan.seeds import check_seed

__all__ = ["STOPS", "RouterPipe", "choice", "mix", "select"]

STOPS = ("first", "all")


def mix(
    pipes: Sequence[Input],
    weights: Sequence[float] | np.ndarray | None = None,
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
            ``weight * window`` whole, else 1000, or more when an input's weight is below
            1/1000: enough slots that every input of positive weight has one in each window).

    Raises:
        ValueError: with ``exact=True``, a ``window`` that gives an input of positive weight
            no slot (it would never be drawn), or weights so uneven that a window giving every
            input a slot would exceed 1,000,000 slots.
    """
    pipes = _check_pipes(pipes, "mix")
    check_bool("mix", "exact", exact)
    w = normalized(weights, len(pipes))
    if stop not in STOPS:
        raise ConfigError(f"mix(stop={stop!r}): choose one of {STOPS}")
    win = None
    if window is not None:
        win = integer(window)
        if win is None or win < 1:
            raise ConfigError(f"mix(window={window!r}): need an int >= 1 (slots per window)")
        if not exact:
            raise ConfigError(f"mix(window={win}) sets the exact mode's window: pass "
                              "exact=True too (a stochastic mix has no windows)")
    if exact:
        win = exact_window(w, weights, win)
    return RouterPipe(pipes, "mix", seed=seed, weights=w, stop=stop, window=win)


def choice(pipes: Sequence[Input], p: Sequence[float] | np.ndarray | Pipeline | None = None,
           seed: int = 0, *, stop: str = "first",
           weights: Sequence[float] | np.ndarray | Pipeline | None = None) -> Pipeline:
    """Each item from input ``i`` with probability ``p[i]``.

    Args:
        pipes: pipelines, Datasets or ``where()`` views.
        p: one probability per input (normalized), or a pipeline yielding one such vector
            per item (a schedule that changes over iteration: a curriculum).
        seed: the draws are a pure function of ``(seed, epoch, item)``.
        stop: ``"first"`` ends at the first draw of an exhausted input; ``"all"`` drops
            exhausted inputs (their share goes to the others) and ends when all are.
        weights: ``p`` by the name :func:`mix` gives it (give one of the two).
    """
    if (p is None) == (weights is None):
        raise TypeError("choice() takes the probabilities once: p=[...] or weights=[...] "
                        f"({'both were given' if p is not None else 'neither was given'})")
    p = weights if p is None else p
    assert p is not None
    pipes = _check_pipes(pipes, "choice")
    if isinstance(p, Pipeline):
        return RouterPipe(pipes, "choice", seed=seed, stop=stop, control=p)
    return RouterPipe(pipes, "choice", seed=seed, weights=normalized(p, len(pipes)), stop=stop)


def select(index: Pipeline, pipes: Sequence[Input], *, stop: str = "first") -> Pipeline:
    """Item ``k`` is the next item of ``pipes[i_k]``, ``i_k`` the ``k``-th item of ``index``.

    Ends when ``index`` ends; when the selected input is exhausted, ``stop="first"`` ends
    too and ``stop="all"`` skips that index item.
    """
    if not isinstance(index, Pipeline):
        raise TypeError(f"select: index must be a Pipeline of ints, got {type(index).__name__}")
    return RouterPipe(_check_pipes(pipes, "select"), "select", stop=stop, control=index)


class RouterPipe(Pipeline):
    """mix / choice / select: see the module docstring."""

    op = "router"

    def __init__(self, pipes: Sequence[Pipeline], kind: str, *, seed: int = 0,
                 weights: np.ndarray | None = None, stop: str = "first",
                 window: int | None = None, control: Pipeline | None = None) -> None:
        if stop not in STOPS:
            raise ConfigError(f"{kind}(stop={stop!r}): choose one of {STOPS}")
        seed = check_seed(seed)
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

    @property
    def endless(self) -> bool:
        if self.control is not None and not self.control.endless:
            return False
        inputs = [c.endless for c in self._children[: self.n]]
        return all(inputs) if self.stop == "first" else any(inputs)

    def _length(self) -> int | None:
        if self.control is not None or self.stop != "all":
            return None
        ns = [c._length() for c in self._children[: self.n]]
        if any(n is None for n in ns):
            return None
        # stop="all" delivers every item of every input that can be drawn
        return sum(n for n, d in zip(ns, self.drawable(), strict=True) if n is not None and d)

    def drawable(self) -> list[bool]:
        """Which inputs a slot can name: weight > 0, or > 0 slots in each exact window."""
        if self.weights is None:
            return [True] * self.n
        counts = self.weights if self.window is None else apportion(self.weights, self.window)
        return [bool(c > 0) for c in counts]

    def _schema(self) -> pa.Schema | None:
        return common_schema(self._children[: self.n])

    def _build(self, epoch: int) -> Node:
        common = self.schema
        kids = [cast_to(c, c._build(epoch), common) for c in self._children[: self.n]]
        ctl = self.control._build(epoch) if self.control is not None else None
        return RouterNode(self, kids, ctl, epoch)
