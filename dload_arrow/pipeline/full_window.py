"""The full shuffle's window, usable while it is being filled.

A full shuffle permutes every row of the view, so its one window holds every unit. Decoded in
storage order, the first chunk had to wait for the last unit: the whole view decoded before
the first item (1.07 s for the 1 GB image workload, every epoch). Here the units are decoded
in the order the epoch first needs them (:func:`first_need_order`), and :class:`FullRows`
hands out a chunk as soon as the units holding its rows are in. The first chunk is one row
and the unit holding it is decoded first (:func:`chunk_cap`, ``FIRST_ROUND``), so the first
item waits for one unit, of one shard (on a cold cache, that shard's download only: the first
item of the 1 GB image workload from loopback S3 came after 0.5-0.9 s instead of 1.2-1.5 s,
when the first chunk of 16 rows needed units of every shard). The chunks then double, and each
finds more units decoded.

In Arrow mode each chunk takes its rows from a :class:`~dload_arrow.pipeline.unit_rows.
UnitRows` over the units decoded so far. Building one views every unit's large columns and
concatenates the small ones, so it is rebuilt only when a chunk needs a unit it lacks, and
then over at least twice the units of the last build: a few builds an epoch. In item mode
the rows are converted as their unit arrives and each chunk indexes them.

Offsets stay valid as units arrive: unit ``u``'s rows start at ``offset[u]`` in arrival
order, and every build covers a prefix of the arrivals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.chunks import row_dicts
from dload_arrow.pipeline.row_bytes import Sizes, row_bytes
from dload_arrow.pipeline.unit_rows import UnitRows
from dload_arrow.pipeline.window_layout import OwnRows, Window, items_pay_off, memory_check
from dload_arrow.waits import cond_wait

__all__ = ["FIRST_CHUNK", "FIRST_ROUND", "FullRows", "chunk_cap", "fill", "first_need_order",
           "start_full"]

FIRST_CHUNK = 1  # rows of the first chunk of a full shuffle; then 1, 2, 4... (chunk_cap)
FIRST_ROUND = 1  # units decoded before the first chunk can go out, at most (then 2, 4...)
_BLOCK = 1 << 20  # positions located at a time (bounds the temporary arrays)


def chunk_cap(done: int, chunk_rows: int) -> int:
    """Rows of the chunk after ``done`` rows of the epoch: doubling from FIRST_CHUNK up to
    ``chunk_rows`` (a function of the position: a restored state finds the same chunks)."""
    return min(chunk_rows, max(FIRST_CHUNK, done))


def first_need_order(plan: Any, positions: Callable[[int, int], np.ndarray], count: int,
                     needed: np.ndarray) -> np.ndarray:
    """``needed`` (epoch-order units) sorted by the first of the ``count`` positions to read
    that falls in each (``positions(a, b)``: positions ``a..b-1`` of them, in reading order).

    Units no position falls in keep their order, at the end. Linear in the rows: the first
    position of each row is scattered (each row is read once), then a minimum per unit.
    """
    n = plan.num_rows
    when = np.full(n, count, np.int64)
    for a in range(0, count, _BLOCK):
        b = min(count, a + _BLOCK)
        u, r = plan.locate(positions(a, b))
        when[plan.unit_starts[u] + r] = np.arange(a, b, dtype=np.int64)
    rows = np.diff(plan.unit_starts)
    first = np.full(len(rows), count, np.int64)
    filled = rows > 0
    if n:
        first[filled] = np.minimum.reduceat(when, plan.unit_starts[:-1][filled])
    order = needed[np.argsort(first[needed], kind="stable")]
    # rounds of doubling size, each read in storage order: runs of units from one shard
    # (one file opened per run, the reader's decoding threads work within a run)
    at, size = 0, FIRST_ROUND
    while at < len(order):
        order[at:at + size] = np.sort(order[at:at + size])
        at, size = at + size, 2 * size
    return order


class FullRows:
    """The units of a full shuffle as they are decoded, for chunks to take rows from.

    The window thread calls :meth:`add` for each decoded unit and :meth:`finish` at the end
    (with the error, if one stopped it); consumers call :meth:`rows`, which waits.

    Args:
        units: how many units the plan has (``offset`` is indexed by unit).
        expected: how many units will arrive.
    """

    def __init__(self, units: int, expected: int) -> None:
        self.offset = np.full(units, -1, np.int64)  # first row of each unit, arrival order
        self._arrival = np.full(units, -1, np.int64)
        self._expected = expected
        self._cond = threading.Condition()
        self._batches: list[pa.RecordBatch] = []
        self._items: list[Any] = []
        self._arrived = 0
        # what the waiting consumer needs: these units, and this many arrived (woken once
        # it is all there, not per unit: each wake-up takes the GIL from the converting thread)
        self._missing: set[int] = set()
        self._count = 0
        self._done = False
        self._error: BaseException | None = None
        self._built: UnitRows | None = None
        self._built_units = 0
        self._items_mode = False
        self.stop = False  # set by the consumer: the window thread stops at the next unit
        self.sizes = Sizes()  # each kept row's bytes, numbered as the items and batches are

    def add(self, u: int, at: int, kept: pa.RecordBatch | None, items: list[Any] | None,
            sizes: np.ndarray) -> None:
        """Unit ``u`` arrived: its rows numbered from ``at`` (of every unit's rows, for the
        own-rows index), ``kept`` as Arrow or ``items`` as Python objects, ``sizes`` the
        bytes of each kept row (``row_bytes``)."""
        with self._cond:
            self.sizes.append(sizes)
            self.offset[u] = at
            self._arrival[u] = self._arrived
            if items is not None:
                self._items_mode = True
                self._items.extend(items)
            elif kept is not None:
                self._batches.append(kept)
            self._arrived += 1
            awaited = u in self._missing
            self._missing.discard(u)
            if not self._missing and self._arrived >= self._count and (
                    awaited or self._arrived == self._count):
                self._cond.notify_all()

    def finish(self, error: BaseException | None = None) -> None:
        """No more units (``error``: why not), waking every waiting consumer."""
        with self._cond:
            self._done = True
            self._error = error
            self._cond.notify_all()

    def _wait(self, units: np.ndarray | None = None, count: int = 0) -> None:
        """Wait until ``units`` and ``count`` units in all arrived (the caller holds the
        condition)."""
        if units is not None:
            self._missing = set(units[self._arrival[units] < 0].tolist())
        self._count = count if count > self._arrived else 0
        while self._missing or self._arrived < self._count:
            if self._error is not None:
                raise self._error
            if self._done:
                raise RuntimeError(f"the full shuffle's window ended after {self._arrived} of "
                                   f"{self._expected} units")
            cond_wait(self._cond)

    def rows(self, units: np.ndarray) -> list[Any] | UnitRows | None:
        """What holds the rows of ``units`` once they are in (this waits): the items (item
        mode), a ``UnitRows`` (Arrow mode), or None when no unit had rows."""
        arrival = self._arrival
        with self._cond:
            self._wait(units)
            if self._items_mode:
                return self._items
            last = int(arrival[units].max(initial=-1)) + 1
            if last <= self._built_units:
                return self._built
            target = min(self._expected, max(last, 2 * self._built_units))
            self._wait(count=target)
            batches, arrived = self._batches[self._built_units:], self._arrived
        if self._built is None:  # outside the lock: units keep arriving
            self._built = UnitRows(batches).prepare() if batches else None
        else:
            self._built = self._built.extended(batches).prepare()
        self._built_units = arrived
        return self._built


def fill(rows: FullRows, reader: Iterator[pa.RecordBatch], needed: np.ndarray,
         own: OwnRows | None, items: bool, check: Callable[[pa.RecordBatch, bool], None],
         ) -> None:
    """Decode the ``needed`` units (``reader`` yields them in that order) into ``rows``.

    ``items``: convert rows to Python items when they pay off (``items_pay_off``); ``check``
    is called with each decoded unit (does the whole window still fit in memory?).
    """
    as_items: bool | None = None if items else False
    at = 0
    try:
        for u in needed.tolist():
            if rows.stop:
                break
            batch = next(reader)
            n = batch.num_rows
            if n and as_items is None:
                as_items = items_pay_off(batch)
            check(batch, bool(as_items))
            if own is not None:
                batch = own.keep(u, at, batch)
            converted = row_dicts(batch) if as_items else None
            rows.add(u, at, None if as_items else batch, converted, row_bytes(batch))
            at += n
    except BaseException as e:
        rows.finish(e)
        raise
    rows.finish()


def start_full(node: Any, w: int, reader: Iterator[pa.RecordBatch], needed: np.ndarray,
               pool: ThreadPoolExecutor) -> Window:
    """Window ``w`` of ``node``'s full shuffle (a ``DatasetNode``), filled by ``pool``'s
    thread from ``reader`` (the ``needed`` units in that order) while chunks take from it.

    A sharded consumer keeps only its own rows (``OwnRows``); either way the rows it keeps
    are checked against the available memory as the units are decoded (``MemoryCheck``).
    """
    plan = node.plan
    own, kept = None, None
    if node.count > 1:
        pos = node._pos(np.arange(int(node._own(plan.num_rows)), dtype=np.int64))
        u, r = plan.locate(pos)
        own = OwnRows(u, r, np.diff(plan.unit_starts), needed)
        kept = np.bincount(u, minlength=len(plan.order))
    rows = FullRows(len(plan.order), len(needed))
    check = memory_check(node.pipe, plan, needed, kept)
    pool.submit(fill, rows, reader, needed, own, node._items, check.unit)
    return Window(w, None, False, index=None if own is None else own.index, full=rows)
