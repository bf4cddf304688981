"""The dataset source's node: an epoch read window by window, the next window made ahead.

A window (one unit when sequential, about ``buffer`` rows when windowed, everything when full)
is *made* from the decoded batches of its units: for sequential and windowed orders, into one
batch of this consumer's rows in epoch order, every chunk a zero-copy slice of it; for an
unsharded consumer's windows of large rows (``window_layout.takes_per_chunk``), into a
``UnitRows`` each chunk takes its rows from (at most ``CHUNK_BYTES``: row_bytes.py). A large
value is copied once, from its unit (``views=True``: not at all). The full shuffle's window
fills while in use (:mod:`~dload_arrow.pipeline.full_window`).

While the consumer works through window ``w``, a background thread makes the next shuffled
window (decoding and gathering run in C++ without the GIL); ``w`` is released when the next
is asked for: two windows at most. A sequential window (the next decoded unit) is made on
the consumer's thread (a hand-off per unit made items 1.5x slower).

When the consumer turns every chunk into Python items anyway (:meth:`Node.prefer_items`) and
a row's data outweighs its Python objects (``items_pay_off``: images, token tensors), a
shuffled window is made of items: each decoded unit converted once, the objects permuted (no
Arrow gather). Both ways give the same rows in the same order (tests/test_pipeline_shard.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.check import budget_share
from dload_arrow.pipeline.chunks import Chunk
from dload_arrow.pipeline.full_window import chunk_cap, first_need_order, start_full
from dload_arrow.pipeline.node import POSITION, Node, State
from dload_arrow.pipeline.row_bytes import leading_rows
from dload_arrow.pipeline.state_check import check_position
from dload_arrow.pipeline.unit_rows import UnitRows
from dload_arrow.pipeline.views import as_views
from dload_arrow.pipeline.window_layout import (
    Window,
    needed_units,
    projected,
)
from dload_arrow.pipeline.window_make import make_window
from dload_arrow.plan.orders import own_count, own_position
from dload_arrow.rowfilter import filter_rows
from dload_arrow.waits import future_result

__all__ = ["DatasetNode"]


class DatasetNode(Node):
    """Positions of a :class:`~dload_arrow.pipeline.dataset.DatasetPipe`'s epoch, as chunks."""

    def __init__(self, pipe: Any, epoch: int) -> None:
        self.pipe = pipe
        self.plan = pipe.plan(epoch)
        self.n = self.plan.num_rows
        self.index, self.count, self.block = pipe.shard_spec
        self.cheap_skip = pipe.predicate is None  # a filter's output positions are unknown
        self.p = 0
        self._reader: Iterator[pa.RecordBatch] | None = None
        self._needed = np.zeros(0, np.int64)
        self._ni = 0
        self._win: Window | None = None
        self._ahead: tuple[int, Future[Window]] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._items = False  # see prefer_items
        self.share = budget_share()  # sources of the pipeline reading at once (check.py)

    def prefer_items(self) -> None:
        """Shuffled rows go out as lists of items: each decoded unit converted in storage
        order and the Python objects permuted, instead of an Arrow gather (a copy a row)."""
        self._items = self.plan.mode != "sequential" and self.pipe.predicate is None

    def start_ahead(self) -> None:
        """Start making the window of the next position in the background."""
        p = int(self._pos(int(self._own(self.p))))
        if self._win is None and self._ahead is None and p < self.n:
            w = self.plan.window_of(p)
            if self.plan.mode == "full":
                self._win = self._begin_full(w)
                return
            self._start_reader(w)
            self._ahead = (w, self._window_pool().submit(self._make, w))

    def _own(self, p: Any) -> Any:
        return own_count(p, self.index, self.count, self.block)

    def _pos(self, k: Any) -> Any:
        return own_position(k, self.index, self.count, self.block)

    def reset(self, state: State | None = None) -> None:
        self._stop_reader()
        self.p = 0 if state is None else int(state[POSITION])
        check_position(self.p, self.n)

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
            win = self._enter(w)
            wend = int(self.plan.window_starts[w + 1])
            cap = self.pipe.chunk_rows
            if win.full is not None:  # small first chunks (a function of the position)
                cap = chunk_cap(k0, cap)
            k1 = min(int(self._own(wend)), k0 + cap)
            if win.ordered and win.sizes is not None:  # a shuffled chunk: row_bytes.py
                k1 = k0 + leading_rows(win.sizes[k0 - win.first:k1 - win.first])
            self.p = int(self._pos(k1 - 1)) + 1
            if win.ordered:
                if win.items is not None:
                    return win.items[k0 - win.first:k1 - win.first]
                assert isinstance(win.batch, pa.RecordBatch)
                out = win.batch.slice(k0 - win.first, k1 - k0)
            else:
                u, r = self.plan.locate(self._pos(np.arange(k0, k1, dtype=np.int64)))
                if win.full is not None:  # waits for the units of these rows
                    held: Any = win.full.rows(u)
                    offs = win.full.offset[u] + r
                else:
                    assert win.units is not None and win.offs is not None
                    held = win.items if win.items is not None else win.batch
                    offs = win.offs[np.searchsorted(win.units, u)] + r
                if win.index is not None:
                    offs = win.index[offs]
                views = self.pipe.views and self.pipe.predicate is None  # (values not copied)
                sizes = win.full.sizes if win.full is not None else held.sizes()
                if not views and (n := leading_rows(sizes[offs])) < len(offs):
                    offs, self.p = offs[:n], int(self._pos(k0 + n - 1)) + 1
                if isinstance(held, list):
                    return [held[i] for i in offs.tolist()]
                assert isinstance(held, UnitRows)
                out = held.take(offs, views)
            pred = self.pipe.predicate
            if pred is not None:
                out = filter_rows(out, pred)
                if self.pipe.columns is not None:
                    out = out.select(projected(self.pipe.columns))
                if out.num_rows == 0:
                    continue
            return as_views(out) if self.pipe.views else out

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
        if self._ahead is not None or self._pool is not None:
            # a window being made may wait for cache room: give up (read/abandon.py)
            abort = getattr(self._reader, "abort", None)
            if abort is not None:
                abort()
        if self._win is not None and self._win.full is not None:
            self._win.full.stop = True  # the window thread stops at its next unit
        if self._ahead is not None:
            fut = self._ahead[1]
            fut.cancel()
            if not fut.cancelled():
                fut.exception()  # wait: the reader is in use by the window being made
            self._ahead = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if (close := getattr(self._reader, "close", None)) is not None:
            close()
        self._reader = None
        self._win = None

    def _enter(self, w: int) -> Window:
        """Window ``w``; the next one is queued behind it on the window thread, so it starts
        as soon as ``w`` is made, not when the consumer picks ``w`` up (7-14 ms of GIL
        hand-offs a window). A sequential window is made here (module docstring)."""
        if self._win is not None and self._win.w == w:
            return self._win
        self._win = None  # the consumer is past it: its memory can go to the window being made
        if self.plan.mode == "full":
            self._win = self._begin_full(w)
            return self._win
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
        win = future_result(fut)
        self._win = win
        return win

    def _after(self, w: int) -> int | None:
        """The window made after ``w``: the next one holding a needed unit (None: none)."""
        i = int(np.searchsorted(self._needed, self.plan.window_bounds[w + 1]))
        if self.plan.mode == "full" or i >= len(self._needed):
            return None
        return int(self.plan.window_of(int(self.plan.unit_starts[self._needed[i]])))

    def _window_pool(self) -> ThreadPoolExecutor:
        self._pool = self._pool or ThreadPoolExecutor(1, thread_name_prefix="dload-window")
        return self._pool

    def _make(self, w: int) -> Window:
        return make_window(self, w)

    def _begin_full(self, w: int) -> Window:
        """The full shuffle's window, being filled (full_window.py)."""
        self._start_reader(w)
        assert self._reader is not None
        return start_full(self, w, self._reader, self._needed, self._window_pool())

    def _start_reader(self, w: int) -> None:
        from dload_arrow.read.memory import local_consumers
        from dload_arrow.read.reader import iter_units

        self._stop_reader()
        pipe = self.pipe
        self._needed = needed_units(self.plan, w, self.index, self.count, self.block)
        self._ni = 0
        if self.plan.mode == "full":  # decoded in the order the rows are read from here
            k0 = int(self._own(self.p))
            self._needed = first_need_order(
                self.plan, lambda a, b: self._pos(np.arange(k0 + a, k0 + b, dtype=np.int64)),
                int(self._own(self.n)) - k0, self._needed)
        units = [pipe.units[int(self.plan.order[u])] for u in self._needed.tolist()]
        columns = pipe.columns if pipe.predicate is None else None
        self._reader = iter_units(
            pipe.ds.context, pipe.ds.manifest, units, columns=columns,
            full_shuffle=self.plan.mode == "full", consumers=local_consumers(),
            share=self.share,
        )

