"""``Pipeline``: a lazy, re-iterable, resumable description of a sample stream.

A pipeline is an immutable tree of operators; nothing runs until it is iterated. Each
``iter()`` builds the running nodes for one epoch (the next one, or the one given to
:meth:`Pipeline.set_epoch`), checks feasibility first (no I/O), and yields items. The state
(:meth:`Pipeline.state_dict`) is ``{"epoch", "cursor"}``: a small cursor into the planned order,
never buffered samples; :meth:`Pipeline.load_state_dict` makes the next ``iter()`` continue
exactly there.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from dload_arrow.args import check_bool, check_callable, check_count
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline import closer
from dload_arrow.pipeline.iterator import FINGERPRINT, PipelineIterator
from dload_arrow.pipeline.lengths import Lengths
from dload_arrow.pipeline.node import CURSOR, EPOCH, Node, State
from dload_arrow.pipeline.sequences import SequenceOps
from dload_arrow.pipeline.state_check import check_counters
from dload_arrow.pipeline.state_sources import check_sources, with_sources

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

    from dload_arrow.pipeline.check import CheckReport

__all__ = ["Pipeline", "PipelineIterator"]


class Pipeline(Lengths, SequenceOps):
    """A lazy, resumable stream of items; every operator returns a new pipeline. Made by
    ``ds.pipeline()``, ``ds.shuffle()``, ``dl.from_iterable``, ``dl.random_stream`` and the
    combinators (``dl.mix``, ``concat``, ``choice``, ``select``, ``zip_with``); each
    ``iter(p)`` is the next epoch, its order a pure function of (versions, pipeline, seed,
    epoch); ``state_dict()`` / ``load_state_dict()`` resume it exactly. A pipeline is always
    true (``bool(p)``), as a generator is: test for items with ``next(iter(p), None)``.
    """  # (subclasses: _build(epoch) -> Node; _params() and _children describe them)

    op = "pipeline"

    def __init__(self, *children: Pipeline) -> None:
        self._children: tuple[Pipeline, ...] = children
        self._next_epoch = 0
        self._pending: State | None = None
        self._live: Callable[[], PipelineIterator | None] = closer.nothing  # weakly (closer.py)
        self._ended: State | None = None  # where a dropped iteration stood
        self._generation = 0  # one more at each iter(), load_state_dict() and set_epoch()
        self._fp: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Pickled into DataLoader workers: not the live iterator (threads, open files).
        state = dict(self.__dict__)
        state["_live"], state["_ended"] = closer.nothing, None
        return state

    # --- what subclasses provide --------------------------------------------------------

    def _build(self, epoch: int) -> Node:
        raise NotImplementedError(f"{type(self).__name__} has no items of its own: start a "
                                  "pipeline from ds.pipeline(), ds.shuffle(...), "
                                  "dl.from_iterable(...) or dl.random_stream(...)")

    def _params(self) -> dict[str, Any]:
        """Parameters that define this operator (functions included), for fingerprint()."""
        return {}

    def _shown(self) -> dict[str, Any]:
        """What repr() shows: _params() and options that keep the values (views)."""
        return self._params()

    def _push_shard(self, index: int, count: int, block: int) -> Pipeline | None:
        """This pipeline with ``shard`` applied below it, or None when it cannot take it."""
        return None

    def _schema(self) -> pa.Schema | None:
        return None

    @property
    def schema(self) -> pa.Schema | None:
        """The Arrow schema of the items when they are dataset rows (else None: map, batch)."""
        return self._schema()

    def sources(self) -> list[Any]:
        """The dataset sources under this pipeline (for check, fingerprint and lineage)."""
        out: list[Any] = []
        for c in self._children:
            for s in c.sources():
                if s not in out:
                    out.append(s)
        return out

    # --- iteration and state ------------------------------------------------------------

    def __iter__(self) -> PipelineIterator:
        return self._start(chunks=False)

    def iter_chunks(self) -> PipelineIterator:
        """Iterate whole chunks (pyarrow RecordBatches or lists of items) instead of items."""
        return self._start(chunks=True)

    def _start(self, chunks: bool) -> PipelineIterator:
        self.check().raise_if_infeasible()
        with suppress(Exception):  # now, before a captured list or dict changes; a failure
            self.fingerprint()  # never stops iteration (state_dict() raises it then)
        state = self._pending
        epoch = self._next_epoch if state is None else int(state[EPOCH])
        closer.ensure_running()  # here, not in a finalizer
        it = PipelineIterator(self, epoch, None if state is None else state[CURSOR], chunks)
        self._pending, self._next_epoch = None, epoch + 1  # started: a failed start keeps them
        self._generation += 1  # (after: a failed start leaves the live iteration's position)
        if (live := self._live()) is not None:
            live.replace()
        self._live, self._ended = weakref.ref(it), None
        return it

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` run ``epoch`` (the following ones continue from there).

        A loaded state's own epoch keeps its position (``for e in range(state["epoch"], n):
        p.set_epoch(e)`` resumes exactly); another epoch discards the loaded state.
        """
        epoch = check_count("set_epoch", "epoch", epoch)
        if self._pending is not None and int(self._pending[EPOCH]) == epoch:
            return
        self._next_epoch, self._pending, self._ended = epoch, None, None
        self._generation += 1  # a dropped iteration's position is not the next one's

    def state_dict(self) -> State:
        """Where the stream is: the epoch and a cursor (JSON/pickle-able, small). Before any
        iteration it names the start of the next epoch; during one, the position after the
        last item handed out; after an epoch ends, the start of the next."""
        if self._pending is not None:
            return dict(self._pending)
        if (live := self._live()) is not None:
            return live.state_dict()
        ended = self._ended or {EPOCH: self._next_epoch, CURSOR: None,
                                FINGERPRINT: self._short_fp()}
        return with_sources(dict(ended), self)

    def load_state_dict(self, state: State, strict: bool = True) -> None:
        """Make the next ``iter()`` continue exactly at ``state`` (from :meth:`state_dict`).
        Another pipeline's state is refused unless ``strict=False`` (a function's code fixed
        and the order unchanged: a map's; a filter's change may shift the items after it)."""
        if not isinstance(state, dict) or EPOCH not in state or CURSOR not in state:
            raise ConfigError(f"not a pipeline state: {str(state)[:80]!r}; pass what "
                              "state_dict() returned")
        check_sources(self, state, strict=strict)  # another version: refused, strict or not
        fp = state.get(FINGERPRINT)
        if strict and fp is not None and fp != self._short_fp():
            from dload_arrow.pipeline.fingerprint import state_mismatch

            raise ConfigError(state_mismatch(self, str(fp)))
        check_counters(state)
        self._generation += 1  # the live iteration's position is not the pipeline's any more
        if (live := self._live()) is not None:
            live.close()
        self._live, self._ended = closer.nothing, None
        self._pending = {**state, FINGERPRINT: self._short_fp()} if FINGERPRINT in state \
            else dict(state)  # (strict=False: a checkpoint from here on is this pipeline's)
        self._next_epoch = int(state[EPOCH])

    def _short_fp(self) -> str:
        return self.fingerprint()[:16]

    def fingerprint(self) -> str:
        """A stable hash of the definition: sources' versions, operators, parameters, code."""
        if self._fp is None:
            from dload_arrow.pipeline.fingerprint import fingerprint

            self._fp = fingerprint(self)
        return self._fp

    def check(self, consumers: int = 1) -> CheckReport:
        """The feasibility report, with no I/O: sources, resident set, budget, verdict."""
        from dload_arrow.pipeline.check import check_pipeline

        return check_pipeline(self, consumers=consumers)

    def __repr__(self) -> str:
        from dload_arrow.pipeline.fingerprint import describe

        return describe(self)

    # --- operators (one sample in, one out) ------------------------------------------------

    def map(self, fn: Callable[[Any], Any]) -> Pipeline:
        """Apply ``fn`` to every item (dataset rows arrive as dicts)."""
        from dload_arrow.pipeline.transforms import MapPipe

        return MapPipe(self, fn)

    def map_batches(self, fn: Callable[[Any], Any], *, rows_preserved: bool = False) -> Pipeline:
        """Apply ``fn`` to each chunk as a ``pyarrow.RecordBatch``; it returns a RecordBatch,
        Table or polars/pandas DataFrame. ``rows_preserved=True`` promises one row out per row
        in (lets ``shard``/``skip`` pass below it, and ``fn`` should then be row-wise)."""
        from dload_arrow.pipeline.transforms import MapBatchesPipe

        return MapBatchesPipe(self, fn, rows_preserved)

    def filter(self, predicate: Callable[[Any], bool] | pc.Expression) -> Pipeline:
        """Keep items where ``predicate(item)`` is true (or a pyarrow Expression on rows)."""
        from dload_arrow.pipeline.transforms import FilterPipe

        return FilterPipe(self, predicate)

    def flat_map(self, fn: Callable[[Any], Any]) -> Pipeline:
        """Replace each item by the items of the iterable ``fn(item)`` returns."""
        from dload_arrow.pipeline.transforms import FlatMapPipe

        return FlatMapPipe(self, fn)

    def scan(self, fn: Callable[[Any, Any], tuple[Any, Any]], initial: Any) -> Pipeline:
        """Running state: ``acc, out = fn(acc, item)`` yields ``out``; ``acc`` is checkpointed
        (so keep it small and picklable; JSON-able too for a JSON checkpoint: numbers, text,
        bytes, tuples, lists, dicts and numpy values are, sets and datetimes are not)."""
        from dload_arrow.pipeline.scan import ScanPipe

        return ScanPipe(self, fn, initial)

    def select(self, columns: str | Sequence[str]) -> Pipeline:
        """Keep only ``columns`` of each row."""
        from dload_arrow.pipeline.columns import SelectPipe

        return SelectPipe(self, columns)

    def through(self, fn: Callable[[Pipeline], Pipeline]) -> Pipeline:
        """``fn(self)``: reuse a function that builds on a pipeline, inline."""
        out = check_callable("through", "fn", fn)(self)
        if not isinstance(out, Pipeline):
            raise TypeError(f"through({fn!r}) must return a Pipeline, got {type(out).__name__}")
        return out

    # --- structure --------------------------------------------------------------------------

    def batch(
        self, size: int, drop_last: bool = False, collate: Callable[[Any], Any] | None = None
    ) -> Pipeline:
        """Group ``size`` items: a dict of column -> numpy array (a map's torch tensors: one
        tensor) or list (arrays of several shapes: warned), or ``collate(list of items)``."""
        from dload_arrow.pipeline.batching import BatchPipe

        return BatchPipe(self, size, drop_last, collate)

    def unbatch(self) -> Pipeline:
        """Split batches (dicts of columns, lists, RecordBatches) back into items."""
        from dload_arrow.pipeline.batching import UnbatchPipe

        return UnbatchPipe(self)

    def repeat(self, times: int | None = None) -> Pipeline:
        """The stream ``times`` times (forever when None); each pass is a new inner epoch. An
        empty pass is passed over; forever ends when two passes in a row give no item."""
        from dload_arrow.pipeline.control import RepeatPipe

        return RepeatPipe(self, times)

    def take(self, n: int) -> Pipeline:
        """The first ``n`` items."""
        from dload_arrow.pipeline.control import TakePipe

        return TakePipe(self, n)

    def skip(self, n: int) -> Pipeline:
        """Drop the first ``n`` items (without reading them where the sources allow)."""
        from dload_arrow.pipeline.control import SkipPipe

        return SkipPipe(self, n)

    def shard(self, index: int, count: int, block: int = 1) -> Pipeline:
        """Keep items whose ``(position // block) % count == index`` (one consumer of ``count``).

        Positions count this pipeline's output, so the ``count`` shards partition the stream
        exactly and the global order does not depend on ``count``. Pushed below 1:1 operators
        and ``batch`` into dataset sources, which then read only the units they need.
        """
        from dload_arrow.pipeline.shard import shard

        return shard(self, index, count, block)

    def shuffle(
        self, buffer: int | str | None = None, seed: int = 0, *, full: bool = False
    ) -> Pipeline:
        """Shuffle with a window of ``buffer`` items (``full=True``: datasets only, uniform)."""
        from dload_arrow.pipeline.buffer_shuffle import BufferShufflePipe, ops_above

        if full is not False:
            check_bool("shuffle", "full", full)
            raise ConfigError("shuffle(full=True) needs a dataset source: call it on the dataset "
                              f"(ds.shuffle(full=True, seed=...)) before {ops_above(self)}")
        if buffer is None or isinstance(buffer, str):
            raise ConfigError(f"shuffle(buffer={buffer!r}) on a non-dataset pipeline needs a "
                              "buffer in items (an int); byte sizes are for dataset sources")
        return BufferShufflePipe(self, buffer, seed)
