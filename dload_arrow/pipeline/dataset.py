"""The dataset source: a positional plan over a version's (shard, row group) units.

An epoch's order is a pure function ``position -> (unit, row)`` computed from the manifest's
row counts (:class:`dload_arrow.plan.orders.SamplePlan`), so the source's state is just the
next position, and a sharded source (``shard(index, count, block)`` pushed down) plans only
its own positions and reads only the units that hold them:

- ``sequential``: units in storage order, rows in order.
- ``windowed`` (``shuffle(buffer, seed)``): shards permuted, row groups permuted within each
  shard, consecutive units grouped into windows of about ``buffer`` rows, rows permuted within
  each window. A window's units are decoded once, so each unit is read once per epoch and the
  memory held is one window.
- ``full`` (``shuffle(full=True, seed)``): one uniform permutation of all rows; every unit is
  decoded and held (the read planner checks that the dataset fits the cache budget).

A filtered view (``ds.where(...)``) plans over its units' rows and drops rows failing the
predicate after decoding; its positions then no longer count output items, so ``shard`` and
cheap ``skip`` stay above it (correct, but every consumer decodes every unit).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk
from dload_arrow.pipeline.node import POSITION, Node, State
from dload_arrow.plan.orders import SamplePlan, own_count, own_position
from dload_arrow.sizes import parse_size
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["DEFAULT_BUFFER", "DEFAULT_CHUNK_ROWS", "DatasetPipe"]

DEFAULT_BUFFER = 16_384
DEFAULT_CHUNK_ROWS = 1024


class DatasetPipe(Pipeline):
    """A dataset version (or a filtered view of it) as the source of a pipeline."""

    op = "dataset"

    def __init__(
        self,
        ds: Any,
        columns: Sequence[str] | None = None,
        *,
        order: str = "sequential",
        seed: int = 0,
        buffer: int = DEFAULT_BUFFER,
        shard: tuple[int, int, int] = (0, 1, 1),
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
    ) -> None:
        super().__init__()
        self.ds = ds
        self.columns = None if columns is None else (
            [columns] if isinstance(columns, str) else list(columns))
        self.order, self.seed, self.buffer = order, int(seed), int(buffer)
        self.shard_spec = tuple(int(x) for x in shard)
        self.chunk_rows = chunk_rows
        units = ds.units
        if units is None:
            units = [(s.index, rg) for s in ds.manifest.shards for rg in range(len(s.rg_rows))]
        self.units = [(int(s), int(r)) for s, r in units]
        shards = ds.manifest.shards
        self.unit_rows = np.asarray([shards[s].rg_rows[r] for s, r in self.units], np.int64)
        self.unit_shards = np.asarray([s for s, _ in self.units], np.int64)

    # identity for lineage
    @property
    def name(self) -> str:
        return str(self.ds.name)

    @property
    def version(self) -> str:
        return str(self.ds.version)

    @property
    def predicate(self) -> Any:
        return self.ds.predicate

    def _replace(self, **kw: Any) -> DatasetPipe:
        args: dict[str, Any] = dict(order=self.order, seed=self.seed, buffer=self.buffer,
                                    shard=self.shard_spec, chunk_rows=self.chunk_rows)
        args.update(kw)
        return DatasetPipe(self.ds, self.columns, **args)

    def _params(self) -> dict[str, Any]:
        return {
            "dataset": self.name, "version": self.version,
            "units": None if self.ds.units is None else self.units,
            "predicate": None if self.predicate is None else str(self.predicate),
            "columns": self.columns, "order": self.order,
            "seed": self.seed if self.order != "sequential" else None,
            "buffer": self.buffer if self.order == "windowed" else None,
            "shard": list(self.shard_spec) if self.shard_spec[1] > 1 else None,
        }

    def sources(self) -> list[Any]:
        return [self]

    def _length(self) -> int | None:
        if self.predicate is not None:
            return None  # rows are filtered after decoding
        index, count, block = self.shard_spec
        return int(own_count(int(self.unit_rows.sum()), index, count, block))

    def _schema(self) -> pa.Schema | None:
        return _schema_of(self)

    @property
    def finite(self) -> bool:
        return True

    # --- operators that change the plan -----------------------------------------------------

    def shuffle(
        self, buffer: int | str | None = None, seed: int = 0, *, full: bool = False
    ) -> Pipeline:
        """Windowed (``buffer`` rows, or bytes as ``"256MB"``) or full (``full=True``)."""
        if self.shard_spec[1] > 1:
            return super().shuffle(buffer if isinstance(buffer, int) else DEFAULT_BUFFER, seed,
                                   full=full)
        if full:
            return self._replace(order="full", seed=seed)
        return self._replace(order="windowed", seed=seed, buffer=self._buffer_rows(buffer))

    def _buffer_rows(self, buffer: int | str | None) -> int:
        if buffer is None:
            return DEFAULT_BUFFER
        if isinstance(buffer, str):
            m = self.ds.manifest
            per_row = m.num_bytes / max(1, m.num_rows)
            return max(1, math.ceil(parse_size(buffer, "shuffle buffer") / max(per_row, 1e-9)))
        if buffer < 1:
            raise ValueError(f"shuffle buffer must be >= 1 row, got {buffer}")
        return int(buffer)

    def _push_shard(self, index: int, count: int, block: int) -> Pipeline | None:
        if self.predicate is not None or self.shard_spec[1] > 1:
            return None
        return self._replace(shard=(index, count, block))

    # --- planning ------------------------------------------------------------------------------

    def plan(self, epoch: int = 0) -> SamplePlan:
        """The epoch's order (no I/O)."""
        return SamplePlan.build(self.unit_shards, self.unit_rows, self.order, seed=self.seed,
                                epoch=epoch, buffer=self.buffer)

    def order_array(self, epoch: int = 0) -> np.ndarray:
        """The epoch's sample order as row numbers of the view (no I/O): for shuffle_quality."""
        return self.plan(epoch).order_array()

    def shard_ids(self) -> np.ndarray:
        """The shard of each row of the view, rows numbered as in :meth:`order_array`."""
        return np.repeat(self.unit_shards, self.unit_rows)

    def _build(self, epoch: int) -> Node:
        return _DatasetNode(self, epoch)


class _DatasetNode(Node):
    def __init__(self, pipe: DatasetPipe, epoch: int) -> None:
        self.pipe = pipe
        self.plan = pipe.plan(epoch)
        self.n = self.plan.num_rows
        self.index, self.count, self.block = pipe.shard_spec
        self.cheap_skip = pipe.predicate is None
        self.p = 0
        self._reader: Iterator[pa.RecordBatch] | None = None
        self._needed = np.zeros(0, np.int64)
        self._ni = 0
        self._w = -1
        self._wb: pa.RecordBatch | None = None
        self._wunits = np.zeros(0, np.int64)  # decoded units of the window, ascending
        self._woffs = np.zeros(0, np.int64)  # their first row in self._wb

    def _own(self, p: Any) -> Any:
        return own_count(p, self.index, self.count, self.block)

    def _pos(self, k: Any) -> Any:
        return own_position(k, self.index, self.count, self.block)

    # --- contract ---------------------------------------------------------------------------

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
            positions = self._pos(np.arange(k0, k1, dtype=np.int64))
            self._enter(w)
            u, r = self.plan.locate(positions)
            offs = self._woffs[np.searchsorted(self._wunits, u)] + r
            assert self._wb is not None
            if int(offs[-1]) - int(offs[0]) == len(offs) - 1 and np.all(np.diff(offs) == 1):
                out = self._wb.slice(int(offs[0]), len(offs))  # in order: no copy
            else:
                out = self._wb.take(pa.array(offs))
            self.p = int(positions[-1]) + 1
            pred = self.pipe.predicate
            if pred is not None:
                out = out.filter(pred)
                if self.pipe.columns is not None:
                    out = out.select(_projected(self.pipe.columns))
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
        if self._w >= 0 and self.plan.window_of(self.p) > self._w + 1:
            self._stop_reader()  # a long jump: restart the read-ahead where we land
        return n

    def close(self) -> None:
        self._stop_reader()

    # --- reading ----------------------------------------------------------------------------

    def _stop_reader(self) -> None:
        if self._reader is not None:
            close = getattr(self._reader, "close", None)
            if close is not None:
                close()
        self._reader = None
        self._w, self._wb = -1, None

    def _needed_from(self, w0: int) -> np.ndarray:
        """Epoch-order unit positions holding own positions, windows ``w0`` onwards."""
        plan = self.plan
        first = int(plan.window_bounds[w0])
        if self.count == 1:
            return np.arange(first, len(plan.order), dtype=np.int64)
        starts = plan.window_starts
        has = self._own(starts[w0 + 1:]) > self._own(starts[w0:-1])
        out = []
        for w in (np.flatnonzero(has) + w0).tolist():
            if plan.mode == "sequential":
                out.append(np.asarray([plan.window_bounds[w]], np.int64))
                continue
            a, b = int(starts[w]), int(starts[w + 1])
            pos = self._pos(np.arange(self._own(a), self._own(b), dtype=np.int64))
            out.append(np.unique(plan.locate(pos)[0]))
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def _enter(self, w: int) -> None:
        """Decode the needed units of window ``w`` (once) into one batch."""
        if w == self._w:
            return
        lo, hi = int(self.plan.window_bounds[w]), int(self.plan.window_bounds[w + 1])
        if self._reader is None or self._ni >= len(self._needed) or self._needed[self._ni] >= hi:
            self._start_reader(w)
        assert self._reader is not None
        batches: list[pa.RecordBatch] = []
        units: list[int] = []
        offsets: list[int] = []
        at = 0
        while self._ni < len(self._needed) and self._needed[self._ni] < hi:
            u = int(self._needed[self._ni])
            batch = next(self._reader)
            self._ni += 1
            if u < lo:
                continue  # a skipped window's unit, already on its way
            units.append(u)
            offsets.append(at)
            at += batch.num_rows
            batches.append(batch)
        schema = _schema_of(self.pipe, decoded=True)
        if len(batches) == 1:
            self._wb = batches[0]
        elif batches:
            self._wb = pa.concat_batches(batches)
        else:
            self._wb = pa.RecordBatch.from_pylist([], schema=schema)
        self._w = w
        self._wunits = np.asarray(units, np.int64)
        self._woffs = np.asarray(offsets, np.int64)

    def _start_reader(self, w: int) -> None:
        from dload_arrow.read.reader import iter_units

        self._stop_reader()
        pipe = self.pipe
        self._needed = self._needed_from(w)
        self._ni = 0
        units = [pipe.units[int(self.plan.order[u])] for u in self._needed.tolist()]
        columns = pipe.columns if pipe.predicate is None else None
        self._reader = iter_units(
            pipe.ds.context, pipe.ds.manifest, units, columns=columns,
            full_shuffle=self.plan.mode == "full",
        )


def _projected(columns: Sequence[str]) -> list[str]:
    return [KEY_COLUMN] + [c for c in dict.fromkeys(columns) if c != KEY_COLUMN]


def _schema_of(pipe: DatasetPipe, decoded: bool = False) -> pa.Schema:
    """The rows' schema (``decoded``: as read, before a predicate's projection)."""
    schema = pipe.ds.manifest.schema
    if pipe.columns is None or (decoded and pipe.predicate is not None):
        return schema
    return pa.schema([schema.field(c) for c in _projected(pipe.columns)])
