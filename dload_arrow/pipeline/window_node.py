"""The dataset source's node: an epoch read window by window, the next window made ahead.

A window (one unit when sequential, about ``buffer`` rows when windowed, everything when full)
is *made* from the decoded batches of its units: for sequential and windowed orders, into one
batch of this consumer's rows already in epoch order, so that every chunk handed out is a
zero-copy slice of it; for the full shuffle, and for an unsharded consumer's windows of
large rows (:func:`~dload_arrow.pipeline.window_layout.takes_per_chunk`), into a
:class:`~dload_arrow.pipeline.unit_rows.UnitRows` over its units that each chunk takes its
rows from (a whole permuted copy of the dataset would double the memory; a whole permuted copy
of a window of images costs more than the chunks' takes). Either way a large value is copied
once, from its unit into the output.

While the consumer works through window ``w``, a background thread makes the next shuffled
window this consumer needs: decoding (in the reader's own thread) and gathering (``UnitRows``)
run in C++ without the GIL, so they overlap the consumer's Python work. The consumer releases
``w`` when it asks for the next window, so at most two windows are alive (the one being made
includes its decoded units). A sequential window, just the next decoded unit, is made on the
consumer's thread: a hand-off per unit made sequential items 1.5x slower.

When the consumer turns every chunk into Python items anyway (:meth:`Node.prefer_items`) and
a row's data outweighs its Python objects (``items_pay_off``: images, token tensors), a
shuffled window is made of items: each decoded unit is converted once, in storage order, and
the objects are permuted (no Arrow gather, a copy of every row). Both ways give the same rows
in the same order (tests/test_pipeline_shard.py). A sharded full shuffle keeps only its own
rows (``OwnRows``) and checks them against the available memory first.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.chunks import Chunk, row_dicts
from dload_arrow.pipeline.node import POSITION, Node, State
from dload_arrow.pipeline.unit_rows import UnitRows
from dload_arrow.pipeline.window_layout import (
    OwnRows,
    Window,
    check_memory,
    items_pay_off,
    needed_units,
    projected,
    schema_of,
    takes_per_chunk,
)
from dload_arrow.plan.orders import own_count, own_position
from dload_arrow.rowfilter import filter_rows

__all__ = ["DatasetNode"]


class DatasetNode(Node):
    """Positions of a :class:`~dload_arrow.pipeline.dataset.DatasetPipe`'s epoch, as chunks."""

    def __init__(self, pipe: Any, epoch: int) -> None:
        self.pipe = pipe
        self.plan = pipe.plan(epoch)
        self.n = self.plan.num_rows
        self.index, self.count, self.block = pipe.shard_spec
        self.p = 0
        self._reader: Iterator[pa.RecordBatch] | None = None
        self._needed = np.zeros(0, np.int64)
        self._ni = 0
        self._win: Window | None = None
        self._ahead: tuple[int, Future[Window]] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._items = False  # see prefer_items

    def prefer_items(self) -> None:
        """Shuffled rows go out as lists of items, gathered in Python (no Arrow copy).

        Each row is converted once either way; converting each decoded unit in storage order
        and permuting the Python objects replaces the Arrow gather (a copy of every row).
        """
        self._items = self.plan.mode != "sequential" and self.pipe.predicate is None

    def start_ahead(self) -> None:
        """Start making the window of the next position in the background."""
        p = int(self._pos(int(self._own(self.p))))
        if self._win is None and self._ahead is None and p < self.n:
            w = self.plan.window_of(p)
            self._start_reader(w)
            self._ahead = (w, self._window_pool().submit(self._make, w))

    def _own(self, p: Any) -> Any:
        return own_count(p, self.index, self.count, self.block)

    def _pos(self, k: Any) -> Any:
        return own_position(k, self.index, self.count, self.block)

    def reset(self, state: State | None = None) -> None:
        self._stop_reader()
        self.p = 0 if state is None else int(state[POSITION])

    def get_state(self) -> State:
        return {POSITION: self.p}

    def next(self) -> Chunk:
        while True:
            k0 = int(self._own(self.p))
            p = int(self._pos(k0))
            if p >= self.n:
                self.p = self.n
                self._stop_reader()
                raise StopIteration
            w = self.plan.window_of(p)
            wend = int(self.plan.window_starts[w + 1])
            k1 = min(int(self._own(wend)), k0 + self.pipe.chunk_rows)
            win = self._enter(w)
            self.p = int(self._pos(k1 - 1)) + 1
            if win.ordered:
                if win.items is not None:
                    return win.items[k0 - win.first:k1 - win.first]
                assert isinstance(win.batch, pa.RecordBatch)
                out = win.batch.slice(k0 - win.first, k1 - k0)
            else:
                assert win.units is not None and win.offs is not None
                u, r = self.plan.locate(self._pos(np.arange(k0, k1, dtype=np.int64)))
                offs = win.offs[np.searchsorted(win.units, u)] + r
                if win.index is not None:
                    offs = win.index[offs]
                if win.items is not None:
                    return [win.items[i] for i in offs.tolist()]
                assert isinstance(win.batch, UnitRows)
                out = win.batch.take(offs)
            pred = self.pipe.predicate
            if pred is not None:
                out = filter_rows(out, pred)
                if self.pipe.columns is not None:
                    out = out.select(projected(self.pipe.columns))
                if out.num_rows == 0:
                    continue
            return out

    def skip(self, n: int) -> int:
        k = int(self._own(self.p))
        total = int(self._own(self.n))
        target = k + n
        if target >= total:
            self.p = self.n
            return total - k
        self.p = int(self._pos(target))
        current = self._win.w if self._win is not None else -1
        if current >= 0 and self.plan.window_of(self.p) > current + 1:
            self._stop_reader()  # a long jump: restart the read-ahead where we land
        return n

    def close(self) -> None:
        self._stop_reader()

    def _stop_reader(self) -> None:
        if self._ahead is not None:
            fut = self._ahead[1]
            fut.cancel()
            if not fut.cancelled():
                fut.exception()  # wait: the reader is in use by the window being made
            self._ahead = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._reader is not None:
            close = getattr(self._reader, "close", None)
            if close is not None:
                close()
        self._reader = None
        self._win = None

    def _enter(self, w: int) -> Window:
        """Window ``w``; the next one is queued behind it on the window thread.

        Queued before waiting for ``w``, the next window starts as soon as ``w`` is made,
        instead of after the consumer picks ``w`` up (7-14 ms of GIL hand-offs a window).
        A sequential window is made here (see the module docstring).
        """
        if self._win is not None and self._win.w == w:
            return self._win
        self._win = None  # the consumer is past it: its memory can go to the window being made
        hi = int(self.plan.window_bounds[w + 1])
        sync = self.plan.mode == "sequential"  # see the docstring
        if self._ahead is not None and self._ahead[0] == w:
            fut = self._ahead[1]
        else:
            if (self._ahead is not None or self._reader is None or self._ni >= len(self._needed)
                    or self._needed[self._ni] >= hi):
                self._start_reader(w)
            if sync:
                self._ahead = None
                self._win = self._make(w)
                return self._win
            fut = self._window_pool().submit(self._make, w)
        self._ahead = None
        nxt = None if sync else self._after(w)
        if nxt is not None:
            self._ahead = (nxt, self._window_pool().submit(self._make, nxt))
        win = fut.result()
        self._win = win
        return win

    def _after(self, w: int) -> int | None:
        """The window made after ``w``: the next one holding a needed unit (None: none)."""
        if self.plan.mode == "full":
            return None
        i = int(np.searchsorted(self._needed, self.plan.window_bounds[w + 1]))
        if i >= len(self._needed):
            return None
        return int(self.plan.window_of(int(self.plan.unit_starts[self._needed[i]])))

    def _window_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="dload-window")
        return self._pool

    def _make(self, w: int) -> Window:
        """Decode the needed units of window ``w`` (once) and lay its rows out."""
        assert self._reader is not None
        plan = self.plan
        lo, hi = int(plan.window_bounds[w]), int(plan.window_bounds[w + 1])
        batches: list[pa.RecordBatch] = []
        rows: list[Any] = []  # item mode: converted as the units arrive (decode runs ahead)
        units: list[int] = []
        offsets: list[int] = []
        at = 0
        own = self._own_rows() if plan.mode == "full" and self.count > 1 else None
        items: bool | None = None if self._items else False  # decided on the first rows
        unchecked = plan.mode == "full"
        while self._ni < len(self._needed) and self._needed[self._ni] < hi:
            u = int(self._needed[self._ni])
            batch = next(self._reader)
            self._ni += 1
            if u < lo:
                continue  # a skipped window's unit, already on its way
            units.append(u)
            offsets.append(at)
            if batch.num_rows and (items is None or unchecked):
                if items is None:
                    items = items_pay_off(batch)
                if unchecked:  # a full shuffle holds every row it keeps: will they fit?
                    unchecked = False
                    held = own.count if own is not None else int(
                        np.diff(plan.unit_starts)[self._needed].sum())
                    check_memory(self.pipe.ds.name, batch, held, items)
            n = batch.num_rows
            if own is not None:
                batch = own.keep(u, at, batch)
            at += n
            if items:
                rows.extend(row_dicts(batch))
            else:
                batches.append(batch)
        wunits, woffs = np.asarray(units, np.int64), np.asarray(offsets, np.int64)
        index = None if own is None else own.index
        if items:
            if plan.mode == "full":
                return Window(w, None, False, units=wunits, offs=woffs, items=rows,
                               index=index)
            first = int(self._own(int(plan.window_starts[w])))
            end = int(self._own(int(plan.window_starts[w + 1])))
            u, r = plan.locate(self._pos(np.arange(first, end, dtype=np.int64)))
            sel = (woffs[np.searchsorted(wunits, u)] + r).tolist()
            storage = rows if len(sel) == len(rows) else None  # else: free the others now
            return Window(w, None, True, first, items=[rows[i] for i in sel], storage=storage)
        # A sharded consumer's whole gather keeps only its own rows (1/count of the window);
        # taking per chunk would keep every row of the window in each consumer.
        per_chunk = plan.mode == "full" or (
            self.count == 1 and len(batches) > 1 and takes_per_chunk(batches))
        if not batches:
            empty = pa.RecordBatch.from_pylist([], schema=schema_of(self.pipe, decoded=True))
            return Window(w, empty, True, int(self._own(int(plan.window_starts[w]))))
        # large values are copied once, straight from their units
        unit_rows = UnitRows(batches, once=not per_chunk)
        if per_chunk:  # each chunk takes its rows (next)
            return Window(w, unit_rows.prepare(), False, units=wunits, offs=woffs, index=index)
        first = int(self._own(int(plan.window_starts[w])))
        end = int(self._own(int(plan.window_starts[w + 1])))
        u, r = plan.locate(self._pos(np.arange(first, end, dtype=np.int64)))
        return Window(w, unit_rows.take(woffs[np.searchsorted(wunits, u)] + r), True, first)

    def _own_rows(self) -> OwnRows:
        """This consumer's rows of the full shuffle, by unit (the rest is not kept)."""
        pos = self._pos(np.arange(int(self._own(self.n)), dtype=np.int64))
        u, r = self.plan.locate(pos)
        return OwnRows(u, r, np.diff(self.plan.unit_starts), self._needed)

    def _start_reader(self, w: int) -> None:
        from dload_arrow.read.reader import iter_units

        self._stop_reader()
        pipe = self.pipe
        self._needed = needed_units(self.plan, w, self.index, self.count, self.block)
        self._ni = 0
        units = [pipe.units[int(self.plan.order[u])] for u in self._needed.tolist()]
        columns = pipe.columns if pipe.predicate is None else None
        self._reader = iter_units(
            pipe.ds.context, pipe.ds.manifest, units, columns=columns,
            full_shuffle=self.plan.mode == "full",
        )

