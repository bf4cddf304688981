"""Making a windowed shuffle's window: decode its needed units once and lay its rows out.

The dataset node (``window_node.py``) calls :func:`make_window` on its window thread, one
window ahead of the consumer. A window holds its rows in one of three ways
(``window_layout.py`` says when each pays off):

- **items**: each unit converted to Python items as it arrives, the items permuted into the
  consumer's order (per-sample consumers of large rows);
- **per chunk**: the decoded units kept as a ``UnitRows`` each chunk takes its rows from
  (large rows, one consumer);
- **gathered**: one Arrow ``take`` of the consumer's own rows in order (small rows, or a
  sharded consumer, which keeps only its own rows).

Every shuffled window also records each row's bytes (``row_bytes``), in the consumer's order
or the units' order, so its chunks are cut at ``CHUNK_BYTES`` the same way whichever of the
three holds them: a position saved from items resumes in record batches, and back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.chunks import row_dicts
from dload_arrow.pipeline.row_bytes import row_bytes
from dload_arrow.pipeline.unit_rows import UnitRows
from dload_arrow.pipeline.window_layout import Window, items_pay_off, schema_of, takes_per_chunk

__all__ = ["make_window"]


def make_window(node: Any, w: int) -> Window:
    """Decode the needed units of window ``w`` from ``node``'s reader (once) and lay its
    rows out (a :class:`~dload_arrow.pipeline.window_node.DatasetNode`)."""
    assert node._reader is not None
    plan = node.plan
    lo, hi = int(plan.window_bounds[w]), int(plan.window_bounds[w + 1])
    batches: list[pa.RecordBatch] = []
    rows: list[Any] = []  # item mode: converted as the units arrive (decode runs ahead)
    sizes: list[np.ndarray] = []
    units: list[int] = []
    offsets: list[int] = []
    at = 0
    items: bool | None = None if node._items else False  # decided on the first rows
    measure = plan.mode != "sequential"  # a sequential window is one unit, never cut
    while node._ni < len(node._needed) and node._needed[node._ni] < hi:
        u = int(node._needed[node._ni])
        batch = next(node._reader)
        node._ni += 1
        if u < lo:
            continue  # a skipped window's unit, already on its way
        units.append(u)
        offsets.append(at)
        if batch.num_rows and items is None:
            items = items_pay_off(batch)
        at += batch.num_rows
        if measure:
            sizes.append(row_bytes(batch))
        if items:
            rows.extend(row_dicts(batch))
        else:
            batches.append(batch)
    wunits, woffs = np.asarray(units, np.int64), np.asarray(offsets, np.int64)
    every = np.concatenate(sizes) if sizes else None  # each row's bytes, units' order
    first = int(node._own(int(plan.window_starts[w])))
    end = int(node._own(int(plan.window_starts[w + 1])))

    def consumer_order() -> np.ndarray:  # this consumer's rows, as rows of the units
        u, r = plan.locate(node._pos(np.arange(first, end, dtype=np.int64)))
        return woffs[np.searchsorted(wunits, u)] + r

    if items:
        sel = consumer_order()
        storage = rows if len(sel) == len(rows) else None  # else: free the others now
        return Window(w, None, True, first, items=[rows[i] for i in sel.tolist()],
                      storage=storage, sizes=None if every is None else every[sel])
    if not batches:
        empty = pa.RecordBatch.from_pylist([], schema=schema_of(node.pipe, decoded=True))
        return Window(w, empty, True, first)
    # A sharded consumer's whole gather keeps only its own rows (1/count of the window);
    # taking per chunk would keep every row of the window in each consumer.
    per_chunk = node.count == 1 and len(batches) > 1 and takes_per_chunk(batches)
    # large values are copied once, straight from their units
    unit_rows = UnitRows(batches, once=not per_chunk, sizes=every)
    if per_chunk:  # each chunk takes its rows (DatasetNode.next)
        return Window(w, unit_rows.prepare(), False, units=wunits, offs=woffs)
    sel = consumer_order()
    return Window(w, unit_rows.take(sel), True, first,
                  sizes=None if every is None else every[sel])
