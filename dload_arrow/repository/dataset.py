"""``Dataset``: one immutable version of a named dataset, and the entry to reading it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from dload_arrow.args import MAX_COUNT, check_bool, column_names
from dload_arrow.errors import ConfigError, MissingKeyError
from dload_arrow.repository.dataset_fields import VersionFields
from dload_arrow.repository.shortcuts import PipelineShortcuts
from dload_arrow.store.manifest import Manifest

if TYPE_CHECKING:
    import polars as pl

    from dload_arrow.read.lookup import RandomAccess
    from dload_arrow.read.planner import ReadPlan
    from dload_arrow.repository.repository import Repository
    from dload_arrow.rowfilter import RowFilter

__all__ = ["Dataset"]


_RAISE: Any = object()  # get()'s default: raise NotFoundError
GET_DEFAULT_HINT = ("; for a value instead of this error pass it as default= "
                    "(ds.get(key, default=None))")
_WHERE_SHOWN = 200  # characters of a view's condition its repr shows


class Dataset(VersionFields, PipelineShortcuts):
    """A dataset version: metadata from its manifest, and the read methods.

    Obtain one from :meth:`Repository.dataset`. Everything here is immutable: the version id
    names exactly these bytes on every machine.
    """

    def __init__(
        self,
        repo: Repository,
        manifest: Manifest,
        *,
        predicate: RowFilter | None = None,
        units: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        self.repo = repo
        self.manifest = manifest
        # A filtered view (``where``): only these (shard, row group) units are read, and rows
        # are filtered by ``predicate`` after decoding. None means all units / all rows.
        self.predicate = predicate
        self.units = None if units is None else list(units)

    def __repr__(self) -> str:
        head = f"Dataset({self.name!r}, version={self.version[:12]!r}"
        shards = f"shards={len(self.manifest.shards)})"
        if self.units is None and self.predicate is None:
            return f"{head}, rows={self.num_rows}, {shards}"
        # A view's rows are known only by reading them: shown once counted, never read here
        # (a notebook displaying a view of a remote root would download every shard).
        filters = [f.text for f in getattr(self, "_filters", ())]
        text = " AND ".join(f"({t})" for t in filters) if len(filters) > 1 else "".join(filters)
        if len(text) > _WHERE_SHOWN:  # a 20,000-value IN list would print 130 KB in a notebook
            text = f"{text[:_WHERE_SHOWN]}... ({len(text)} chars)"
        rows = (str(len(self._random_access)) if "_random_access" in self.__dict__
                else f"? of {self.manifest.num_rows} (len() counts them)")
        return f"{head}, where={text!r}, rows={rows}, {shards}"

    @property
    def num_rows(self) -> int:
        """Rows in this version, or in this filtered view (counted by one pass, once)."""
        if self.units is None and self.predicate is None:
            return self.manifest.num_rows
        return len(self._random_access)

    @property
    def num_bytes(self) -> int:
        """Bytes of this version's shards (a view's too: the version's)."""
        return self.manifest.num_bytes

    @property
    def num_shards(self) -> int:
        """Shards of this version (a view's too: the version's)."""
        return len(self.manifest.shards)

    def __len__(self) -> int:
        return self.num_rows

    # --- read path (issue: streaming) -------------------------------------------------------

    def units_all(self) -> list[tuple[int, int]]:
        """Every ``(shard, row_group)`` unit of the version, in storage order (ignores views)."""
        from dload_arrow.read.reader import all_units

        return all_units(self.manifest)

    def read_units(self) -> list[tuple[int, int]]:
        """The units this dataset (or filtered view) reads: ``units``, else all of them."""
        return self.units_all() if self.units is None else list(self.units)

    def plan(self, *, full_shuffle: bool = False, consumers: int = 1,
             prefetch: int | None = None) -> ReadPlan:
        """How reading this dataset would use the cache, and whether it fits (no network I/O)."""
        from dload_arrow.read.planner import plan_read

        return plan_read(self.context, self.manifest, self.read_units(),
                         full_shuffle=full_shuffle, consumers=consumers, prefetch=prefetch)

    def batches(self, columns: Sequence[str] | None = None, *,
                prefetch: int | None = None, views: bool = False) -> Iterator[pa.RecordBatch]:
        """Record batches in storage order (one per row group with matching rows).

        ``__key__`` is always the first column; ``columns`` picks the others (default all).
        ``views=True``: binary and string columns as view types, as ``pipeline(views=True)``.
        Raises InfeasiblePlanError before any I/O when the plan cannot fit the cache.
        """
        from dload_arrow.pipeline.guarded import RESTART, Guarded
        from dload_arrow.pipeline.views import as_views
        from dload_arrow.read.reader import iter_units

        check_bool("batches", "views", views)
        it = iter_units(self.context, self.manifest, self.read_units(), columns=columns,
                        predicate=self.predicate, prefetch=prefetch)
        return Guarded(((as_views(b) if views else b) for b in it if b.num_rows),
                       "ds.batches()", RESTART)

    def samples(self, columns: Sequence[str] | None = None, *,
                prefetch: int | None = None) -> Iterator[dict[str, Any]]:
        """Per-sample dicts with ``__key__``; tensors as shaped numpy arrays, blobs as bytes."""
        from dload_arrow.pipeline.guarded import RESTART, Guarded
        from dload_arrow.read.samples import iter_samples

        return Guarded(iter_samples(self.batches(columns, prefetch=prefetch)), "ds.samples()",
                       RESTART)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without this process's lookup index (it holds a lock) and to_polars()
        holds: a spawned DataLoader worker builds its own (QA lookup60: after one get(), the
        pickle failed, and spawn workers with it)."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_random_access", "_held_files")}

    @cached_property
    def _random_access(self) -> RandomAccess:
        from dload_arrow.read.lookup import RandomAccess

        return RandomAccess(self.context, self.manifest, self.units, self.predicate)

    def __getitem__(self, i: int) -> dict[str, Any]:
        """Sample number ``i`` (negative counts from the end); reads one row group by range."""
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"index a Dataset with an int, got {i!r}; use get(key) for keys")
        from dload_arrow.read.samples import row_to_sample

        return row_to_sample(self._random_access.row(int(i)))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The samples in storage order: ``samples()`` (one streaming read, not a lookup per
        row, which is what Python's fallback to ``__getitem__`` would do)."""
        return self.samples()

    def __contains__(self, key: object) -> bool:
        """Whether a sample has key ``key``: a lookup like :meth:`get`, never a scan."""
        if not isinstance(key, str):
            raise TypeError(f"`in` tests sample keys (strings), got {type(key).__name__}; "
                            "compare samples yourself, e.g. `s['__key__'] in ds`")
        try:
            self._random_access.get(key, [])
        except MissingKeyError:  # a missing shard is no answer: it raises
            return False
        return True

    def get(self, key: str, columns: Sequence[str] | None = None, *,
            default: Any = _RAISE) -> Any:
        """The sample with key ``key``; never scans the dataset.

        An absent key raises NotFoundError, or returns ``default`` when one is given
        (``ds.get(k, default=None)``: the second positional argument is ``columns``).
        """
        from dload_arrow.read.samples import row_to_sample

        if isinstance(columns, str):
            columns = [columns]
        elif columns is not None and not isinstance(columns, Sequence):
            raise TypeError(f"get(key, columns): columns is a list of column names, got "
                            f"{columns!r}; for a value when the key is absent use default=")
        try:
            return row_to_sample(self._random_access.get(key, columns))
        except MissingKeyError as e:
            if default is _RAISE:  # get(k, None) passes columns=None: name the keyword
                raise MissingKeyError(f"{e}{GET_DEFAULT_HINT}") from None
            return default

    def take(self, items: Sequence[int | str] | np.ndarray,
             columns: Sequence[str] | None = None) -> pa.Table:
        """Rows by position (ints) or key (strs), in the order given, as a pyarrow Table."""
        return self._random_access.take(items, columns, warn=True)

    # --- exploration (issue: catalog) -------------------------------------------------------

    def where(self, condition: str) -> Dataset:
        """A filtered view: rows where ``condition`` holds, e.g. ``"label = 3 and score > .5"``.

        Comparisons (``= != <> < <= > >=``), ``IN (...)``, ``IS [NOT] NULL``, ``BETWEEN``,
        ``AND``/``OR``/``NOT`` and parentheses over columns and literals, with SQL's NULL rules.
        Times are ISO text (``"when >= '2024-01-21'"``); against a column with a time zone, a
        time without an offset is read as UTC. Categorical columns compare by their values.
        Row groups whose manifest statistics rule the condition out are skipped (see
        :attr:`pruning`); the rest are filtered row by row. Chained calls AND together. The
        view reads like the dataset everywhere: batches, samples, pipelines, torch, polars.
        """
        from dload_arrow.catalog.filtering import compile_filter, prune_units

        compiled = compile_filter(condition, self.schema)
        units = prune_units(compiled.node, self.manifest, self.units)
        predicate = compiled.row_filter if self.predicate is None else (
            self.predicate & compiled.row_filter)
        view = Dataset(self.repo, self.manifest, predicate=predicate, units=units)
        view._filters = (*getattr(self, "_filters", ()), compiled)  # type: ignore[attr-defined]
        return view

    @property
    def pruning(self) -> dict[str, Any]:
        """What the statistics saved: units (row groups) and shards read versus the total."""
        shards = self.manifest.shards
        total = sum(len(s.rg_rows) for s in shards)
        units = self.read_units()
        filters = getattr(self, "_filters", ())
        return {
            "filter": " AND ".join(f"({f.text})" for f in filters) or None,
            "units_total": total,
            "units_read": len(units),
            "units_skipped": total - len(units),
            "shards_total": len(shards),
            "shards_read": len({s for s, _ in units}),
            "rows_scanned": sum(shards[s].rg_rows[r] for s, r in units),
        }

    def to_arrow(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of the dataset or view as a pyarrow Table (``__key__`` first)."""
        from dload_arrow.catalog.explore import to_arrow

        return to_arrow(self.context, self.manifest, self.units, self.predicate, columns)

    def to_pandas(self, columns: Sequence[str] | None = None, *, nullable: bool = False
                  ) -> Any:
        """Every row as a pandas DataFrame; a tensor cell is a numpy array of its shape. An
        integer or bool column holding a null is pandas' ``Int64``/``boolean`` (else numpy's
        dtype); ``nullable=True`` gives those dtypes whatever rows are read."""
        from dload_arrow.catalog.frames import pandas_frame

        return pandas_frame(self.to_arrow(column_names(columns, "to_pandas")),
                            nullable=check_bool("to_pandas", "nullable", nullable))

    def to_polars(self, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """A polars LazyFrame over the shards, with projection and predicate pushdown;
        a tensor column is a ``pl.Array`` of its shape.

        The shard files are read in place (local root) or from the cache, checked for
        feasibility and held (not evicted) while this dataset object lives: for a view,
        keep the view (``w = ds.where(...); lf = w.to_polars()``).
        """
        from dload_arrow.catalog.polars_view import scan_polars
        from dload_arrow.catalog.predicate import And

        filters = getattr(self, "_filters", ())
        if self.predicate is not None and not filters:
            raise NotImplementedError(
                "to_polars() of a view built without where(): use to_arrow() and pl.from_arrow"
            )
        node = None
        for f in filters:
            node = f.node if node is None else And(node, f.node)
        lf, files = scan_polars(self.context, self.manifest, self.units, node, columns)
        self._held_files = [*getattr(self, "_held_files", []), files.park()]
        return lf

    def head(self, n: int = 5, columns: Sequence[str] | None = None) -> pa.Table:
        """The first ``n`` rows, reading only the first row group(s)."""
        from dload_arrow.catalog.explore import head

        if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 0 <= n <= MAX_COUNT:
            raise ConfigError(f"head(n) takes a row count of 0 or more (at most {MAX_COUNT:,}), "
                              f"got {n!r}")
        return head(self.context, self.manifest, self.units, self.predicate, n, columns)

    def describe(self, exact: bool | None = None) -> pa.Table:
        """Per column: type, count, nulls, min, max, mean.

        From the manifest's statistics without reading data, unless the view has a filter or
        ``exact=True`` (then the rows are read and measured, and ``mean`` is filled in).
        """
        from dload_arrow.catalog.explore import describe

        return describe(self.context, self.manifest, self.units, self.predicate, exact)
