"""Routing runs of slots at once, for the router (:mod:`dload_arrow.pipeline.routes`).

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

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.chunks import Chunk, chunk_items, same_schema
from dload_arrow.pipeline.unit_rows import UnitRows

__all__ = ["interleave", "normalized", "run_length", "slot_sources"]


def normalized(weights: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray:
    """``weights`` (default equal) as probabilities; ValueError unless n valid ones."""
    if isinstance(weights, Mapping):  # list() of a dict is its keys
        raise ConfigError(f"weights {weights!r} must be a sequence of {n} numbers in the order "
                          "of the inputs, not a dict: pass list(weights.values()) if that is "
                          "their order")
    if isinstance(weights, str | bytes):  # list() of a str is its characters
        raise ConfigError(f"weights {weights!r} must be a sequence of {n} numbers, one per "
                          "input, not text: e.g. [0.7, 0.3]")
    try:
        w = np.ones(n) if weights is None else np.asarray(list(weights), dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"weights {weights!r} must be {n} finite non-negative numbers with a "
                          f"positive sum (one per input): {e}") from e
    with np.errstate(over="ignore"):
        total = w.sum()
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or total <= 0:
        raise ConfigError(
            f"weights {np.atleast_1d(w).tolist()} must be {n} finite non-negative numbers with a "
            "positive sum (one per input)"
        )
    if not np.isfinite(total):  # finite weights whose sum overflows (1e308 each)
        w = w / w.max()  # only then: other weights keep their exact quotients (and mixes)
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
            same_schema(b.schema, batches[0][1].schema) for _, b in batches):
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
