"""The window of an exact mix (``mix(..., exact=True)``): every input of positive weight must
get a slot in it.

An exact window holds the apportioned count of each input (largest remainder,
:func:`dload_arrow.plan.orders.apportion`); an input whose count is 0 would never be drawn,
and with ``stop="all"`` its items would be lost without a word. So the default window grows
until every input of positive weight has a slot, and a window the caller gave that leaves one
out is refused, naming the window that would hold it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dload_arrow.errors import ConfigError
from dload_arrow.plan.orders import apportion

__all__ = ["MAX_GIVEN_WINDOW", "MAX_WINDOW", "exact_window"]

MAX_WINDOW = 1_000_000
"""The largest default window: each window's order is a permutation of its slots, drawn as
the mix enters it, so a window costs its size in memory and time."""
MAX_GIVEN_WINDOW = 100_000_000
"""The largest window a caller may pass (800 MB of slot order)."""
_WHOLE_UP_TO = 1000  # the default looks this far for a window that makes every count whole


def exact_window(w: np.ndarray, weights: Sequence[float] | np.ndarray | None,
                 window: int | None) -> int:
    """The window for normalized weights ``w`` (``weights`` as given, for messages): the
    caller's ``window`` once checked, else the default.

    Raises:
        ValueError: an input of positive weight gets no slot in the caller's window, or would
            need a window of more than :data:`MAX_WINDOW` slots to get one by default.
    """
    if window is None:
        for n in range(1, _WHOLE_UP_TO + 1):
            x = w * n
            if np.all(np.abs(x - np.round(x)) < 1e-9) and not _starved(w, n):
                return n  # (a weight of 1e-12 is "whole" at 0 slots: not that)
        if not _starved(w, _WHOLE_UP_TO):
            return _WHOLE_UP_TO
        need = _slot_window(w)
        if need > MAX_WINDOW:
            i = _rarest(w, _starved(w, _WHOLE_UP_TO))
            raise ConfigError(
                f"mix(exact=True): {_input(i, w, weights)} needs a window of {need:,} slots to "
                f"get one, more than the {MAX_WINDOW:,} a window may hold: raise its weight, "
                "leave it out, or pass exact=False (it is then drawn at its weight's rate)")
        return need
    if window > MAX_GIVEN_WINDOW:
        raise ConfigError(
            f"mix(exact=True, window={window:,}): a window may hold at most "
            f"{MAX_GIVEN_WINDOW:,} slots (its order, a permutation of its slots, is held in "
            "memory at 8 bytes a slot); pass a smaller window")
    starved = _starved(w, window)
    if starved:
        i = _rarest(w, starved)
        need = _slot_window(w)
        others = f" (and {len(starved) - 1} more input(s))" if len(starved) > 1 else ""
        raise ConfigError(
            f"mix(exact=True, window={window}): {_input(i, w, weights)}{others} gets no slot "
            f"in a window of {window:,}, so its items would never be drawn; the smallest window "
            f"holding one slot of its weight is {need:,}: pass window={need} or more, or leave "
            "window unset to have one chosen")
    return window


def _starved(w: np.ndarray, window: int) -> list[int]:
    """The inputs of positive weight that get 0 slots in a window of ``window``."""
    counts = apportion(w, window)
    return [i for i in range(len(w)) if w[i] > 0 and counts[i] == 0]


def _slot_window(w: np.ndarray) -> int:
    """The smallest window in which every positive weight is worth a whole slot or more."""
    low = float(np.min(w[w > 0]))
    if low * MAX_WINDOW < 0.5:  # far too big anyway (1/low may not even be finite)
        return math.ceil(min(1 / low, 1e18))
    n = max(1, math.ceil(1 / low))
    while np.any(np.floor(w[w > 0] * n) < 1):  # 1/low rounded down by a hair
        n += 1
    return n


def _rarest(w: np.ndarray, inputs: list[int]) -> int:
    return min(inputs, key=lambda i: float(w[i]))


def _input(i: int, w: np.ndarray, weights: Sequence[float] | np.ndarray | None) -> str:
    """``input 0 (weight 1, 0.000333 of the total)``: the weight as given and its share."""
    share = float(w[i])
    given = None if weights is None else float(list(weights)[i])
    if given is None or math.isclose(given, share, rel_tol=1e-6):
        return f"input {i} (weight {share:g})"
    return f"input {i} (weight {given:g}, {share:g} of the total)"
