"""The router's node: ``mix``, ``choice`` and ``select`` routed slot by slot, or in runs.

:class:`RouterNode` decides each output slot's source (rules: pipeline/router.py) and keeps
the state: the slot, which sources are exhausted, each source's cursor.

**Runs.** Routing slot by slot costs a few microseconds of Python and numpy per item (a uniform,
a cumulative sum, a search, a one-item take). With fixed weights the sources of the next slots
are known ahead (a pure function of ``(seed, epoch, slot)``), so the router decides a *run* of
slots at once (:func:`slot_sources`), cut where a source would need more items than its cursor
has buffered (:func:`run_length`). Within a run no source can run out, so ``stop`` never
applies and the output is the one routing slot by slot would give; one take per source and one
:func:`interleave` replace a take per item. At a cut the router routes one slot the slow way,
which loads the source's next chunk (or finds it exhausted) and the runs go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.errors import ConfigError, shown
from dload_arrow.pipeline.chunks import Chunk, chunk_items, chunk_len, concat_chunks
from dload_arrow.pipeline.node import CHILDREN, CURSOR, DONE, POSITION, ItemCursor, Node, State
from dload_arrow.pipeline.unit_rows import UnitRows
from dload_arrow.plan.orders import MIX_BLOCK, exact_pattern, mix_uniforms

__all__ = ["RouterNode", "interleave", "normalized", "run_length", "slot_sources"]

_OUT_CHUNK = 256


def normalized(weights: Sequence[float] | None, n: int) -> np.ndarray:
    """``weights`` (default equal) as probabilities; ValueError unless n valid ones."""
    try:
        w = np.ones(n) if weights is None else np.asarray(list(weights), dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"weights {weights!r} must be {n} finite non-negative numbers with a "
                          f"positive sum (one per input): {e}") from e
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ConfigError(
            f"weights {np.atleast_1d(w).tolist()} must be {n} finite non-negative numbers with a "
            "positive sum (one per input)"
        )
    return w / w.sum()


def slot_sources(weights: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """The source of each slot drawn with ``uniforms`` (as the slot-by-slot pick computes it)."""
    cdf = np.cumsum(weights / weights.sum())
    picks = np.searchsorted(cdf, uniforms, side="right")
    return np.minimum(picks, len(cdf) - 1)


def run_length(picks: np.ndarray, available: Sequence[int]) -> int:
    """The longest prefix of ``picks`` naming each source ``i`` at most ``available[i]`` times."""
    n = len(picks)
    for i, a in enumerate(available):
        hits = np.flatnonzero(picks[:n] == i)
        if len(hits) > a:
            n = int(hits[a])
    return n


def interleave(parts: Sequence[Chunk | None], picks: np.ndarray) -> Chunk:
    """The items of ``parts``, each in its order, placed where ``picks`` names their source.

    ``parts[i]`` holds exactly as many items as ``picks`` names ``i`` (None for none). Record
    batches of one schema stay one record batch; anything else becomes a list of items.
    """
    given = [i for i, p in enumerate(parts) if p is not None]
    batches = [(i, p) for i, p in enumerate(parts) if isinstance(p, pa.RecordBatch)]
    if batches and len(batches) == len(given) and all(
            b.schema.equals(batches[0][1].schema) for _, b in batches):
        starts = np.zeros(len(parts), np.int64)
        at = 0
        for i, b in batches:
            starts[i] = at
            at += b.num_rows
        order = np.empty(len(picks), np.int64)
        for i in given:
            where = np.flatnonzero(picks == i)
            order[where] = starts[i] + np.arange(len(where))
        # one copy of each large value (no concatenation of the parts first)
        return UnitRows([b for _, b in batches], once=True).take(order)
    its = [iter(chunk_items(p)) if p is not None else iter(()) for p in parts]
    return [next(its[i]) for i in picks.tolist()]


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
        self._probs = np.ones(len(kids))  # the last probability item a choice drew with
        self.cheap_skip = all(k.cheap_skip for k in kids) and (
            control is None or control.cheap_skip)

    def reset(self, state: State | None = None) -> None:
        self._started = False
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
        """Advance one slot: the item (or 1 when not taking), or None at the end."""
        got = self._route_once(take)
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
        self._start()
        parts: list[Chunk] = []
        have = 0
        while have < _OUT_CHUNK:
            got = self._run(_OUT_CHUNK - have, True)
            if got is None:
                got = self._route(True)
                if got is None:
                    break
            parts.append(got)  # type: ignore[arg-type]
            have += chunk_len(got)  # type: ignore[arg-type]
        if not parts:
            raise StopIteration
        return concat_chunks(parts)

    def skip(self, n: int) -> int:
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

