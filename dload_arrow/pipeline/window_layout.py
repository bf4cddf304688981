"""How a made window holds its rows: as items or Arrow, own rows only, within memory.

:class:`Window` is a made window (its rows gathered from decoded units by
:class:`~dload_arrow.pipeline.unit_rows.UnitRows`).

**Items or Arrow.** A consumer that wants Python items can get a shuffled window as items
(each decoded unit converted once, the dicts permuted) or as Arrow (one ``take`` per chunk,
converted chunk by chunk). Items win when a row's data outweighs the Python objects made for
it (images, token tensors: the ``take`` would copy every large value once more), Arrow wins
for small rows of many columns (tabular data: a dict per row costs more than the row, and
converting the whole window up front delays the first item). :func:`items_pay_off` decides
from the first decoded unit; the measurements behind it are in bench/notes/speed-work.md.

**Own rows.** A full shuffle permutes the whole view, so each consumer (a DataLoader worker, a
rank) reads every row group that holds one of its rows, which is nearly all of them. Keeping
every decoded row would make each of N consumers on a machine hold the whole view.
``OwnRows`` keeps only the consumer's own rows of each unit and maps a unit-relative row to
where it is kept, so a consumer holds about 1/N of the view.

**Memory.** As the full shuffle's window is filled, :class:`MemoryCheck` compares what the rows
the consumer keeps will take with what :mod:`dload_arrow.read.memory` found available when the
first unit came: the decoded units so far, plus the rest scaled from them by rows and by the
stored bytes the manifest records (the smaller of the two: on uniform rows both are exact and
the first unit already tells; when the first units hold smaller rows than the rest, the
running total corrects it within a few units, long before the memory runs out). The held
bytes are the decoded ones times what the window's representation costs (measured, below).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import int64_array
from dload_arrow.pipeline.unit_rows import LARGE_VALUE_BYTES, UnitRows
from dload_arrow.plan.orders import own_count, own_position
from dload_arrow.read.memory import available_memory, full_shuffle_error, local_consumers
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["LARGE_ROW_BYTES", "MemoryCheck", "OwnRows", "Window", "items_pay_off",
           "memory_check", "needed_units", "projected", "schema_of", "takes_per_chunk"]

# A row as a dict of Python objects, beyond its data (sys.getsizeof, CPython 3.11): a dict of
# 4 columns is 184 bytes and of 11 columns 464; bytes, str and int headers are 28-49 bytes.
_DICT_BYTES = 64
_VALUE_BYTES = 96  # the dict's slot and the value's header
# What a full shuffle's window holds per decoded byte (anonymous RSS growth over a whole epoch,
# 120 MB decoded, pyarrow 26, mimalloc): items: the values copied into Python objects, 1.13-
# 1.19x the data plus _object_bytes a row; Arrow: the units, plus for small values the columns
# concatenated (UnitRows) while the previous concatenation is still alive as the window grows:
# 3.3x (600-byte blobs) and 4.0x (2M tabular rows of 42 bytes). Large values are viewed, not
# copied: only the chunks taken from them come on top, a few chunks whatever the view's size.
_ITEM_COPIES = 1.15
_SMALL_VALUE_COPIES = 3.5
# Rows this large (on average, decoded) make a shuffled Arrow window take per chunk.
LARGE_ROW_BYTES = 1024


def _object_bytes(batch: pa.RecordBatch) -> int:
    return _DICT_BYTES + _VALUE_BYTES * batch.num_columns


def items_pay_off(batch: pa.RecordBatch) -> bool:
    """Whether rows like ``batch``'s carry more data than the Python objects made for them."""
    return bool(batch.num_rows) and batch.nbytes / batch.num_rows >= _object_bytes(batch)


def takes_per_chunk(batches: Sequence[pa.RecordBatch]) -> bool:
    """Whether a shuffled window of ``batches`` is better taken from chunk by chunk.

    Gathering a whole window into epoch order copies it into one fresh allocation, and the
    window thread stops taking decoded units until the copy is done. For large rows (a
    100 MB window of 10 KB images: about 30 ms a window, much of it zeroing new pages) that
    stalls the reading; each chunk taking its rows from the units (``UnitRows``) instead reuses
    its memory chunk after chunk. For small rows the whole gather is cheaper than a take per
    chunk (bench/notes/speed-work.md has both measurements).
    """
    rows = sum(b.num_rows for b in batches)
    return bool(rows) and sum(b.nbytes for b in batches) / rows >= LARGE_ROW_BYTES


def _held_per_byte(first: pa.RecordBatch, items: bool) -> tuple[float, int]:
    """What the window holds for rows like ``first``: bytes per decoded byte, and Python
    object bytes per row (see the module's notes on memory)."""
    if items:  # units become dicts of Python objects (the batches are dropped)
        return _ITEM_COPIES, _object_bytes(first)
    large = first.nbytes >= LARGE_VALUE_BYTES * first.num_rows
    return (1.0 if large else _SMALL_VALUE_COPIES), 0


class MemoryCheck:
    """Whether the rows a full shuffle's consumer keeps fit in memory, checked per unit.

    Call :meth:`unit` with each decoded unit, in the order of ``stored``: it raises
    InfeasiblePlanError once the decoded units plus the estimate for the rest exceed what was
    available when the first unit came (a few operations a unit, none a row).

    Args:
        dataset: named in the message.
        kept: rows the consumer keeps of each unit it decodes (all of them, unsharded).
        rows: rows of each unit.
        stored: stored bytes of each unit (the manifest's ``rg_bytes``).
    """

    def __init__(self, dataset: str, kept: np.ndarray, rows: np.ndarray,
                 stored: np.ndarray) -> None:
        self.dataset = dataset
        self.held_rows = int(kept.sum())
        self._frac = (kept / np.maximum(rows, 1)).tolist()
        self._rows, self._stored = rows.tolist(), stored.tolist()
        self._left_rows = float(kept.sum())
        self._left_stored = float((stored * kept / np.maximum(rows, 1)).sum())
        self._i = self._read_rows = self._read_stored = 0
        self._decoded = self._held = 0.0  # bytes decoded; of them, bytes of kept rows
        self._free: int | None = None
        self._copies, self._objects = 1.0, 0
        self._on = True

    def unit(self, batch: pa.RecordBatch, items: bool) -> None:
        """The next unit was decoded into ``batch`` (``items``: it becomes Python items)."""
        if not self._on:
            return
        i, d = self._i, batch.nbytes
        self._i += 1
        f, n, b = self._frac[i], self._rows[i], self._stored[i]
        self._decoded += d
        self._held += d * f
        self._read_rows += n
        self._read_stored += b
        self._left_rows -= n * f
        self._left_stored -= b * f
        if not batch.num_rows:
            return
        if self._free is None:  # the first unit with rows: the representation, the room
            free = available_memory()
            if free is None or not self.held_rows:
                self._on = False
                return
            self._free = free
            self._copies, self._objects = _held_per_byte(batch, items)
        # the rest, as the decoded units scale by rows and by stored bytes: the smaller (on
        # skewed units one of them underestimates until the units decoded tell)
        rest = self._decoded / self._read_rows * max(self._left_rows, 0.0)
        if self._read_stored:
            rest = min(rest, self._decoded / self._read_stored * max(self._left_stored, 0.0))
        need = int((self._held + rest) * self._copies + self.held_rows * self._objects)
        need *= local_consumers()
        if need > self._free:
            self._on = False
            units = "its first row group" if self._i == 1 else f"{self._i} row groups"
            raise full_shuffle_error(self.dataset, self.held_rows, need, self._free,
                                     f"estimated from {units} and the stored sizes")


def memory_check(pipe: Any, plan: Any, needed: np.ndarray, kept: np.ndarray | None,
                 ) -> MemoryCheck:
    """The memory check of ``pipe``'s full shuffle decoding the ``needed`` units of
    ``plan`` in that order (``kept``: own rows of each of the plan's units, when sharded)."""
    shards = pipe.ds.manifest.shards
    units = [pipe.units[u] for u in plan.order[needed].tolist()]
    stored = np.asarray([shards[s].rg_bytes[r] for s, r in units], np.float64)
    rows = np.diff(plan.unit_starts)[needed]
    return MemoryCheck(pipe.ds.name, rows if kept is None else kept[needed], rows, stored)


class OwnRows:
    """A consumer's rows of a full shuffle, grouped by the unit that holds them.

    Args:
        units: the unit (epoch position) of each own row.
        rows: the row within its unit of each own row.
        unit_rows: rows of every unit, by epoch position.
        needed: the units read, ascending.
    """

    def __init__(self, units: np.ndarray, rows: np.ndarray, unit_rows: np.ndarray,
                 needed: np.ndarray) -> None:
        order = np.lexsort((rows, units))
        self._units = units[order]
        self._rows = rows[order]
        self.count = len(order)
        # ``index[o + r]``: where row ``r`` of the unit laid out at ``o`` is kept (-1: not own)
        self.index = np.full(int(unit_rows[needed].sum()), -1, np.int64)
        self._kept = 0

    def keep(self, u: int, at: int, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The own rows of unit ``u``, laid out from ``at``, as a batch (in row order)."""
        lo, hi = np.searchsorted(self._units, [u, u + 1])
        mine = self._rows[lo:hi]
        self.index[at + mine] = np.arange(self._kept, self._kept + len(mine))
        self._kept += len(mine)
        if len(mine) == batch.num_rows:
            return batch
        return batch.take(int64_array(mine))


@dataclass
class Window:
    """A made window: ``batch`` holds own rows ``first, first+1, ...`` when ``ordered``."""

    w: int
    batch: pa.RecordBatch | UnitRows | None  # UnitRows: unordered, each chunk takes its rows
    ordered: bool
    first: int = 0
    units: np.ndarray | None = None  # unordered: decoded units (ascending) and first rows
    offs: np.ndarray | None = None
    items: list[Any] | None = None  # item mode: the rows as Python items (ordered: own order)
    index: np.ndarray | None = None  # full, sharded: where each unit row is kept (own rows only)
    # item mode: the same rows in storage order, released after ``items``: freeing them in the
    # order they were allocated is 2.5x faster than in shuffled order (1.7 vs 4.2 ms a window)
    storage: list[Any] | None = None
    full: Any = None  # the full shuffle's window: a FullRows, filled while in use
    sizes: np.ndarray | None = None  # ordered, shuffled: each row's bytes (row_bytes.py)


def needed_units(plan: Any, w0: int, index: int, count: int, block: int) -> np.ndarray:
    """Epoch-order units holding positions of shard ``index`` of ``count`` (blocks of
    ``block``), windows ``w0`` onwards: the units this consumer's reader decodes."""
    first = int(plan.window_bounds[w0])
    if count == 1:
        return np.arange(first, len(plan.order), dtype=np.int64)
    starts = plan.window_starts
    own = own_count(starts, index, count, block)
    out = []
    for w in (np.flatnonzero(own[w0 + 1:] > own[w0:-1]) + w0).tolist():
        if plan.mode == "sequential":
            out.append(np.asarray([plan.window_bounds[w]], np.int64))
            continue
        k = np.arange(own[w], own[w + 1], dtype=np.int64)
        out.append(np.unique(plan.locate(own_position(k, index, count, block))[0]))
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def projected(columns: Sequence[str]) -> list[str]:
    """``__key__`` first, then ``columns`` (each once)."""
    return [KEY_COLUMN] + [c for c in dict.fromkeys(columns) if c != KEY_COLUMN]


def schema_of(pipe: Any, decoded: bool = False) -> pa.Schema:
    """The rows' schema (``decoded``: as read, before a predicate's projection)."""
    schema = pipe.ds.manifest.schema
    if pipe.columns is None or (decoded and pipe.predicate is not None):
        return schema
    return pa.schema([schema.field(c) for c in projected(pipe.columns)])
