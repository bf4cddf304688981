"""The router's node: ``mix``, ``choice`` and ``select`` routed slot by slot, or in runs.

:class:`RouterNode` decides each output slot's source (rules: pipeline/router.py) and keeps
the state: the slot, which sources are exhausted, each source's cursor.

How it routes runs of slots at once, where the sources are known ahead: see
:mod:`dload_arrow.pipeline.route_runs`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError, shown
from dload_arrow.pipeline.chunks import Chunk, chunk_items, chunk_len, concat_chunks
from dload_arrow.pipeline.node import (
    CHILDREN,
    CURSOR,
    DONE,
    POSITION,
    HeldError,
    ItemCursor,
    Node,
    State,
)
from dload_arrow.pipeline.route_runs import interleave, normalized, run_length, slot_sources
from dload_arrow.plan.orders import MIX_BLOCK, exact_pattern, mix_uniforms

__all__ = ["RouterNode", "interleave", "normalized", "run_length", "slot_sources"]

_OUT_CHUNK = 256


class RouterNode(Node):
    """Routes the output slots of a ``RouterPipe`` from its inputs' nodes."""

    def __init__(self, pipe: Any, kids: list[Node], control: Node | None,
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
        self._drawable = pipe.drawable()
        self._started = False
        self._held = HeldError()
        self._probs = np.ones(len(kids))  # the last probability item a choice drew with
        self.cheap_skip = all(k.cheap_skip for k in kids) and (
            control is None or control.cheap_skip)

    def reset(self, state: State | None = None) -> None:
        self._started, self._held.error = False, None
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

    def _uniforms(self, slot: int) -> tuple[np.ndarray, int]:
        """The uniforms of ``slot``'s block and the slot's offset in it."""
        block, off = divmod(slot, MIX_BLOCK)
        if block != self._block:
            self._u, self._block = mix_uniforms(self.pipe.seed, self.epoch, block), block
        return self._u, off

    def _exact(self, slot: int) -> tuple[np.ndarray, int]:
        """The exact pattern of ``slot``'s window and the slot's offset in it."""
        pipe = self.pipe
        assert pipe.window is not None and pipe.weights is not None
        win, off = divmod(slot, pipe.window)
        if win != self._win:
            self._pattern = exact_pattern(pipe.weights, pipe.window, pipe.seed, self.epoch, win)
            self._win = win
        return self._pattern, off

    def _picks(self, m: int) -> np.ndarray | None:
        """Sources of up to ``m`` next slots at once (None: they are decided slot by slot)."""
        pipe = self.pipe
        if self.control is not None or pipe.weights is None or any(self.done):
            return None
        if pipe.window is not None:
            pattern, off = self._exact(self.slot)
            return pattern[off:off + m]
        u, off = self._uniforms(self.slot)
        return slot_sources(pipe.weights, u[off:off + m])

    def _run(self, m: int, take: bool) -> Chunk | int | None:
        """A run of up to ``m`` slots routed at once (routes.py); None: route one slot."""
        picks = self._picks(m)
        if picks is None:
            return None
        n = run_length(picks, [c.buffered() for c in self.cursors])
        if n == 0:
            return None
        picks = picks[:n]
        counts = np.bincount(picks, minlength=len(self.cursors)).tolist()
        self.slot += n
        if not take:
            for c, k in zip(self.cursors, counts, strict=True):
                if k:
                    c.skip(k)
            return n
        parts = [c.take(k) if k else None for c, k in zip(self.cursors, counts, strict=True)]
        return interleave(parts, picks)

    def _pick(self) -> int | None:
        """The source of the current slot; None when the output ends."""
        pipe = self.pipe
        if self.control is not None:
            got = self.control.take(1)
            if got is None:
                return None
            value = chunk_items(got)[0]
            if pipe.op == "select":
                if isinstance(value, bool) or not isinstance(value, int | np.integer):
                    raise TypeError(f"select: the index pipeline gave {value!r} at slot "
                                    f"{self.slot}; it must yield ints (input numbers)")
                i = int(value)
                if not 0 <= i < len(self.cursors):
                    raise IndexError(f"select: index {i} at slot {self.slot} is not in "
                                     f"[0, {len(self.cursors)})")
                return i
            self._probs = self._probabilities(value)
            return self._by_weights(self._probs)
        if pipe.window is not None:
            pattern, off = self._exact(self.slot)
            return int(pattern[off])
        assert pipe.weights is not None
        return self._by_weights(pipe.weights)

    def _probabilities(self, value: Any) -> np.ndarray:
        """A choice's probability item as normalized weights; an error naming the item else."""
        n = len(self.cursors)
        wanted = (f"choice: the probability pipeline gave {shown(value)} at slot {self.slot}; "
                  f"each item must be a sequence of {n} weights, one per input (numbers >= 0 "
                  "with a positive sum)")
        try:  # text, None, a dict, another length: one ConfigError for all
            probs = np.asarray(value, dtype=np.float64)
            if probs.shape != (n,):
                raise ValueError(probs.shape)
            return normalized(list(probs), n)
        except (TypeError, ValueError) as e:
            raise ConfigError(wanted) from e

    def _by_weights(self, w: np.ndarray) -> int | None:  # -1: a choice item with no live input
        if self.pipe.stop == "all" and any(self.done):
            w = np.where(self.done, 0.0, w)
            if w.sum() <= 0:
                return -1 if self.control is not None else None
        u, off = self._uniforms(self.slot)
        return int(slot_sources(w, u[off:off + 1])[0])

    def _route(self, take: bool) -> Chunk | int | None:
        """Advance one slot: the item (or 1 when not taking), or None at the end.

        When an input (or the control stream) fails at an item, the slot, the exhausted inputs
        and the control cursor go back to where they were: the failing input's cursor points
        at its failing item, so going on (or a resume) routes this slot again, the same way.
        """
        slot, done = self.slot, list(self.done)
        ctl = None if self.control is None else self.control.get_state()
        try:
            got = self._route_once(take)
        except Exception:
            self.slot, self.done = slot, done
            if self.control is not None and ctl is not None:
                self.control.reset(ctl)
            raise
        if got is None:
            self.done = [True] * len(self.done)  # ended: later calls end too
        return got

    def _route_once(self, take: bool) -> Chunk | int | None:
        again: np.ndarray | None = None  # a choice's probability item, drawn from again
        while True:
            if all(d or not k for d, k in zip(self.done, self._drawable, strict=True)):
                return None  # every input a slot can name is exhausted
            i = self._pick() if again is None else self._by_weights(again)
            again = None
            self.slot += 1
            if i is None:
                return None
            if i < 0:  # a choice item weighting only exhausted inputs gives no item
                continue
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
            if self.control is not None and self.pipe.op != "select":  # choice: this item
                again = self._probs  # comes from the inputs left (select skips its index)

    def _start(self) -> None:
        """Have every input start its first read now: they overlap instead of queuing."""
        if not self._started:
            self._started = True
            for c, drawable in zip(self.cursors, self._drawable, strict=True):
                if drawable:
                    c.child.start_ahead()

    def next(self) -> Chunk:
        self._held.raise_pending()
        self._start()
        parts: list[Chunk] = []
        have = 0
        try:
            while have < _OUT_CHUNK:
                got = self._run(_OUT_CHUNK - have, True)
                if got is None:
                    got = self._route(True)
                    if got is None:
                        break
                parts.append(got)  # type: ignore[arg-type]
                have += chunk_len(got)  # type: ignore[arg-type]
        except Exception as e:  # an input failed (see _route): the items before go out first
            self._held.hold(e, len(parts))
        if not parts:
            raise StopIteration
        return concat_chunks(parts)

    def skip(self, n: int) -> int:
        self._held.error = None
        k = 0
        while k < n:
            got = self._run(n - k, False)
            if got is None:
                if self._route(False) is None:
                    break
                got = 1
            k += int(got)  # type: ignore[arg-type]
        return k

    def prefer_items(self) -> None:
        for c in self.cursors:  # items are picked one at a time: they become Python anyway
            c.child.prefer_items()

    def close(self) -> None:
        for c in self.cursors:
            c.close()
        if self.control is not None:
            self.control.close()

