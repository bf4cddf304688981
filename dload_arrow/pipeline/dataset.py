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

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import check_bool, column_names
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.node import Node
from dload_arrow.pipeline.views import view_schema
from dload_arrow.pipeline.window_layout import schema_of
from dload_arrow.pipeline.window_node import DatasetNode
from dload_arrow.pipeline.window_size import DEFAULT_BUFFER, window_rows
from dload_arrow.plan.orders import SamplePlan, own_count
from dload_arrow.plan.seeds import check_seed
from dload_arrow.read.reader import projection

__all__ = ["DEFAULT_BUFFER", "DEFAULT_CHUNK_ROWS", "DatasetPipe"]

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
        views: bool = False,
    ) -> None:
        super().__init__()
        check_bool("pipeline", "views", views)
        self.views = views  # binary and string columns as view types (pipeline/views.py)
        self.ds = ds
        self.columns = column_names(columns, "pipeline")
        projection(ds.manifest.schema, self.columns)  # SchemaError now for a missing column
        self.order, self.seed, self.buffer = order, check_seed(seed), int(buffer)
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
                                    shard=self.shard_spec, chunk_rows=self.chunk_rows,
                                    views=self.views)
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

    def _shown(self) -> dict[str, Any]:
        return {**self._params(), "views": True if self.views else None}

    def sources(self) -> list[Any]:
        return [self]

    def _length(self) -> int | None:
        if self.predicate is not None:
            return None  # rows are filtered after decoding
        index, count, block = self.shard_spec
        return int(own_count(int(self.unit_rows.sum()), index, count, block))

    def _schema(self) -> pa.Schema | None:
        return view_schema(schema_of(self)) if self.views else schema_of(self)

    @property
    def finite(self) -> bool:
        return True

    # --- operators that change the plan -----------------------------------------------------

    def shuffle(
        self, buffer: int | str | None = None, seed: int = 0, *, full: bool = False
    ) -> Pipeline:
        """Windowed (``buffer`` rows, or bytes as ``"256MB"``) or full (``full=True``).

        The default buffer is 16,384 rows or 8 row groups, whichever is more. A buffer smaller
        than a row group warns: each window would be one row group.

        Raises:
            ValueError: the pipeline is shuffled already (a second shuffle would replace the
                first), or ``full=True`` or a byte-size buffer after ``shard()``.
        """
        check_bool("shuffle", "full", full)
        if full and buffer is not None:
            raise ConfigError(f"shuffle(buffer={buffer!r}, full=True): a full shuffle permutes "
                              "the whole dataset and takes no buffer; give one or the other")
        if self.shard_spec[1] > 1:
            return self._shuffle_shard(buffer, seed, full)
        if self.order != "sequential":
            call = (f"shuffle(full=True, seed={self.seed})" if self.order == "full" else
                    f"shuffle({self.buffer}, seed={self.seed})")
            raise ConfigError(
                f"this pipeline of dataset {self.name!r} is already shuffled ({call}): a second "
                "shuffle would replace that one, not shuffle its output again; call shuffle "
                "once, with the buffer (or full=True) and seed you want")
        if full:
            return self._replace(order="full", seed=seed)
        return self._replace(order="windowed", seed=seed, buffer=self._buffer_rows(buffer))

    def _shuffle_shard(self, buffer: int | str | None, seed: int, full: bool) -> Pipeline:
        """``shuffle`` after ``shard()`` (pushed into this source): a buffer of the shard's
        items. The dataset's own shuffles plan the whole dataset's order, so they go first."""
        index, count, block = self.shard_spec
        at = f"shard({index}, {count})" if block == 1 else f"shard({index}, {count}, {block})"
        if full:
            raise ConfigError(
                f"shuffle(full=True) after {at}: a full shuffle orders the whole dataset, so it "
                f"goes on the dataset before shard(): ds.shuffle(full=True, seed=...).{at}")
        if isinstance(buffer, str):
            raise ConfigError(
                f"shuffle({buffer!r}) after {at} shuffles the shard's items in a buffer of a "
                f"number of items (an int); a byte size sets the dataset's windowed shuffle, "
                f"which goes before shard(): ds.shuffle({buffer!r}, seed=...).{at}")
        if buffer is None:  # 16,384 items, capped by decoded bytes as the default window is
            buffer = min(DEFAULT_BUFFER, window_rows(self.ds, self.columns, None,
                                                     self.unit_rows))  # (QA dist60)
        return super().shuffle(buffer, seed)

    def _buffer_rows(self, buffer: int | str | None) -> int:
        return window_rows(self.ds, self.columns, buffer, self.unit_rows)

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
        return DatasetNode(self, epoch)
