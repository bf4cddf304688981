"""The reader: a schedule of (shard, row group) units in, one RecordBatch per unit out.

``iter_units`` is what every consumer builds on (``Dataset.batches``, pipelines, the torch
adapter). It checks the plan before any I/O, fetches shards ahead through the cache, decodes
only the projected columns of each row group, and filters rows by the predicate.

Projection: ``__key__`` is always the first column of every batch, whether or not ``columns``
names it; the other columns come in the order given. A predicate may use columns that are not
projected: they are read, used for filtering, and dropped.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq

from dload_arrow.args import column_names
from dload_arrow.errors import IntegrityError, NotFoundError, SchemaError, column_list
from dload_arrow.read.context import ReadContext
from dload_arrow.read.decoders import Decoders, one_batch, threads_pay_off
from dload_arrow.read.fetcher import ShardFetcher, shuffled_head, visits_of
from dload_arrow.read.planner import plan_read
from dload_arrow.read.progressive import PartialShard
from dload_arrow.read.random_access import corrupt_shard, open_shard
from dload_arrow.read.verified import LocalChecks
from dload_arrow.rowfilter import Predicate, filter_rows
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.readahead import Starving, read_ahead
from dload_arrow.store.tensor_layout import restore

__all__ = ["DECODE_AHEAD", "all_units", "iter_units", "one_batch", "projection",
           "threads_pay_off"]

DECODE_AHEAD = 3  # row groups decoded ahead: in the read-ahead queue, and on the decoders
_FOOTERS = 64
_EARLY_MIN_BYTES = 16 * 2**20


def all_units(manifest: Manifest) -> list[tuple[int, int]]:
    """Every ``(shard, row_group)`` unit of a version, in storage order."""
    return [(s.index, rg) for s in manifest.shards for rg in range(len(s.rg_rows))]


def projection(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """The schema of a projection: ``__key__`` first, then ``columns`` (all when None)."""
    columns = column_names(columns)
    if columns is None:
        return schema
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise SchemaError(f"no column(s) {missing} in this dataset; "
                          f"{column_list(schema.names, missing[0], schema=schema)}")
    names = [KEY_COLUMN] + [c for c in dict.fromkeys(columns) if c != KEY_COLUMN]
    return pa.schema([schema.field(n) for n in names], metadata=schema.metadata)


class _Unreadable(Exception):
    """A row group's bytes did not decode (the cause is chained)."""


class _Decoder:
    """Decodes row groups of one file at a time, with projection and predicate."""

    def __init__(self, schema: pa.Schema, predicate: Predicate | None) -> None:
        self.schema = schema
        self.predicate = predicate
        self.read_all = False  # set once the predicate needs columns outside the projection
        self.threads: bool | None = None  # threads_pay_off, decided on the first row group

    def decode(self, pf: pq.ParquetFile, rg: int) -> pa.RecordBatch:
        threads = self.threads

        def read(cols: list[str] | None) -> pa.Table:
            try:
                return pf.read_row_group(rg, columns=cols, use_threads=bool(threads))
            except (OSError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                raise _Unreadable() from e

        got = self.decode_with(read)
        assert got is not None
        if threads is None:  # from the first row group decoded (not from its footer)
            self.threads = threads_pay_off(got)
        return got

    def decode_with(
        self, read: Callable[[list[str] | None], pa.Table | None]
    ) -> pa.RecordBatch | None:
        """Decode the table ``read(columns)`` returns (columns None: all; None passes through).
        Thread-safe: ``read_all`` only turns on, and a call racing the switch retries once."""
        read_all = self.read_all
        table = read(None if read_all else self.schema.names)
        if table is None:
            return None
        table = restore(table)  # tensors stored as bytes: their lists again
        if self.predicate is not None:
            try:
                table = filter_rows(table, self.predicate)
            except pa.ArrowInvalid:
                if read_all:
                    raise
                self.read_all = True
                return self.decode_with(read)
        try:
            return one_batch(table, self.schema)
        except KeyError as e:  # a footer garbled into other column names (QA review57)
            raise _Unreadable() from e


def iter_units(
    ctx: ReadContext,
    manifest: Manifest,
    units: Sequence[tuple[int, int]],
    columns: Sequence[str] | None = None,
    predicate: Predicate | None = None,
    prefetch: int | None = None,
    *,
    consumers: int = 1,
    full_shuffle: bool = False,
    share: int = 1,
) -> Iterator[pa.RecordBatch]:
    """Yield one RecordBatch per unit of ``units``, in order (units may repeat).

    The plan is checked first (InfeasiblePlanError before any request). Shards are fetched
    ahead by background threads into the cache and released as soon as the reading moves past
    them; local roots are read in place. Row groups are decoded ahead of the consumer on
    background threads (``DECODE_AHEAD`` units queued, as many more being decoded:
    read/decoders.py); closing the iterator stops them and releases every hold. A cached
    copy found bad mid-stream is fetched anew, once per shard visit.

    Args:
        ctx: root and cache.
        manifest: the version read.
        units: ``(shard_index, row_group_index)`` pairs.
        columns: columns to decode (``__key__`` is always included, first); None for all.
        predicate: rows not matching it are dropped (a unit may yield an empty batch).
        prefetch: shards fetched ahead; None sizes the window from the budget.
        consumers: readers sharing this machine's cache (sizes the window and the check).
        full_shuffle: check the plan as a full shuffle (every shard resident).
        share: sources read at once with this one, sharing the budget (``plan_read``).
    """
    units = [(int(s), int(r)) for s, r in units]
    _check_units(manifest, units)
    schema = projection(manifest.schema, columns)
    plan = plan_read(ctx, manifest, units, full_shuffle=full_shuffle, consumers=consumers,
                     prefetch=prefetch, share=share).check()
    if len(units) <= 1:
        return _generate(ctx, manifest, units, schema, predicate, plan.window_shards, None)
    # Decode ahead: read_row_group releases the GIL, so the next units decode on another core
    # while the consumer turns this one into samples, tensors or a training step; while the
    # consumer still waits, a second decoding thread joins in (read/decoders.py).
    starving = Starving()
    # A shuffled window needs most of its first shard: it downloads first (not a full shuffle)
    head_first = not full_shuffle and shuffled_head(units)
    abort = threading.Event()  # set by an owner that drops the reader mid-stream
    stream = _generate(ctx, manifest, units, schema, predicate, plan.window_shards, starving,
                       head_first, abort)
    return read_ahead(stream, DECODE_AHEAD, starving, abort=abort.set)


def _generate(ctx: ReadContext, manifest: Manifest, units: list[tuple[int, int]],
              schema: pa.Schema, predicate: Predicate | None,
              window: int, starving: Starving | None,
              head_first: bool = False,
              abort: threading.Event | None = None) -> Iterator[pa.RecordBatch]:
    decoder = _Decoder(schema, predicate)
    decoders = Decoders(decoder.decode) if starving is not None else None
    checks = LocalChecks(ctx.cache_dir, len(schema) == len(manifest.schema)) \
        if ctx.in_place else None  # read in place, never hashed: page CRCs (verified.py)
    verify = False
    pending: dict[int, Future[pa.RecordBatch]] = {}  # units of this visit on the decoders
    ahead = 0  # the first unit not yet handed to the decoders (nor read here)
    fetcher = ShardFetcher(ctx, manifest, visits_of(units), window, head_first=head_first,
                           abort=abort)
    # Time to first batch: while the first shard of a remote root is still downloading, its
    # row groups are decoded from the download's temp file as their bytes arrive (the footer
    # costs one small ranged GET) instead of waiting for the whole shard; the rest of the
    # stream reads the verified cached file. Small shards arrive fast enough.
    big = bool(units) and manifest.shards[units[0][0]].bytes >= _EARLY_MIN_BYTES
    early = (PartialShard(ctx, manifest.shards[units[0][0]], fetcher)
             if big and not ctx.in_place else None)
    footers: OrderedDict[int, pq.FileMetaData] = OrderedDict()  # parsed, by shard (revisited)
    pf: pq.ParquetFile | None = None
    try:
        visit = -1
        current = -1
        refetched = -1  # the visit whose cached copy was fetched anew
        path = ""
        for j, (shard, rg) in enumerate(units):
            if early is not None:
                if visit <= 0 and shard == units[0][0]:
                    got = decoder.decode_with(partial(early.read, rg))
                    if got is not None:
                        yield got
                        visit, current = 0, shard
                        continue
                    visit, current = -1, -1  # the verified file is there: read it from here
                else:
                    fetcher.get(0)  # leaving the partly read shard: its sha256 must pass
                early.close()
                early = None
            if shard != current or pf is None:
                visit += 1
                current = shard
                if pf is not None:
                    pf.close()
                if decoders is not None:
                    assert not pending  # every unit of the visit was taken
                    decoders.end_visit()  # before the hold moves on
                path = fetcher.get(visit)
                entry = manifest.shards[shard]
                verify = checks is not None and checks.check(path, entry.digest, len(entry.rg_rows))
                try:
                    pf = open_shard(ctx, path, entry.digest, manifest.name, footers.get(shard),
                                    verify, manifest.version, entry.rg_rows, entry.bytes)
                # A bad cached copy is removed, and a cached copy gone (the cache directory
                # deleted since it was held) is missing: fetch it anew, once.
                except (IntegrityError, NotFoundError):
                    if ctx.in_place or os.path.exists(path):
                        raise
                    refetched, path = visit, fetcher.refetch(visit)
                    pf = open_shard(ctx, path, manifest.shards[shard].digest, manifest.name,
                                    version=manifest.version)
                footers[shard] = pf.metadata
                footers.move_to_end(shard)
                if len(footers) > _FOOTERS:
                    footers.popitem(last=False)
            ahead = max(ahead, j + 1)
            if decoders is not None:  # the visit's next units decode while this one is read
                while (ahead < len(units) and ahead <= j + DECODE_AHEAD
                       and units[ahead][0] == shard):  # starving: on both threads
                    pending[ahead] = decoders.submit(path, footers[shard], units[ahead][1],
                                                     ahead % 2 if starving else 0, verify)
                    ahead += 1
            try:
                fut = pending.pop(j, None)
                try:
                    batch = decoder.decode(pf, rg) if fut is None else fut.result()
                except FileNotFoundError:  # another reader removed the cached copy the
                    batch = decoder.decode(pf, rg)  # thread would open: ours still maps it
            except _Unreadable as e:  # unverified bytes: a local root's, or a cached copy
                err = corrupt_shard(ctx, manifest.shards[shard].digest, manifest.name,
                                    f"row group {rg} does not decode: {e.__cause__}", path)
                if ctx.in_place or refetched == visit or os.path.exists(path):
                    raise err from e  # the root's copy, or bytes this pyarrow cannot decode
                # The cached copy went bad after its download and was removed: fetch it anew
                # (verified) and read on from this unit, once per visit.
                refetched, ahead = visit, j + 1
                futures.wait(pending.values())
                pending.clear()
                if decoders is not None:
                    decoders.end_visit()
                pf.close()
                path = fetcher.refetch(visit)
                pf = open_shard(ctx, path, manifest.shards[shard].digest, manifest.name,
                                version=manifest.version)
                footers[shard] = pf.metadata  # the bad copy's may have parsed wrong
                try:
                    batch = decoder.decode(pf, rg)
                except _Unreadable as e2:
                    raise corrupt_shard(ctx, manifest.shards[shard].digest, manifest.name,
                                        f"row group {rg} does not decode: {e2.__cause__}",
                                        path) from e2
            if checks is not None:
                checks.passed(manifest.shards[shard].digest, rg)
            yield batch
        if early is not None:
            fetcher.get(0)  # the stream ends inside the first shard: its sha256 must pass
    finally:
        if decoders is not None:
            decoders.close()  # waits for the units in flight: nothing reads the files after
        if early is not None:
            early.close()
        if pf is not None:
            pf.close()
        fetcher.close()


def _check_units(manifest: Manifest, units: list[tuple[int, int]]) -> None:
    shards = manifest.shards
    for s, rg in units:
        if not 0 <= s < len(shards) or not 0 <= rg < len(shards[s].rg_rows):
            raise IndexError(
                f"unit ({s}, {rg}) is not in {manifest.name}@{manifest.version[:12]}: it has "
                f"{len(shards)} shards"
                + (f" and shard {s} has {len(shards[s].rg_rows)} row groups"
                   if 0 <= s < len(shards) else "")
            )
