"""``as_iterable_dataset``: a pipeline as an exact, elastic, resumable torch IterableDataset.

Each (rank, worker) consumer streams its share of the epoch's global output stream, dealt as
:class:`dload_arrow.plan.partition.Deal` describes: rank-major, then round-robin over a rank's
DataLoader workers, so ``DataLoader(ds, num_workers=W, batch_size=None)`` yields exactly the
rank's stream whatever ``W`` is. The state is a cursor ``{"epoch", "position"}`` into the
global stream, valid for any number of ranks and workers, plus the pipeline's fingerprint
(``"pipeline"``) so that another pipeline refuses it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils.data

from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.check import CheckReport
from dload_arrow.pipeline.guarded import Guarded
from dload_arrow.pipeline.node import check_count
from dload_arrow.pipeline.state_sources import with_sources
from dload_arrow.plan.partition import UNEVEN_MODES, Deal, Uneven
from dload_arrow.read.memory import set_local_consumers
from dload_arrow.torch.control import Control, Plan
from dload_arrow.torch.cursor import Cursor, deal_of, rank_length, stream_share, supersede
from dload_arrow.torch.forking import freeze_inherited
from dload_arrow.torch.ranks import Ranks, local_world_size, resolve_rank
from dload_arrow.torch.source import (
    as_source,
    check_length,
    compact,
    refuse_loaded,
    refuse_past_end,
    source_schema,
    start_epoch,
)
from dload_arrow.torch.state import from_state, unseen_consumption, worker_state
from dload_arrow.torch.tensors import to_torch

__all__ = ["StreamDataset", "as_iterable_dataset", "resolve_rank"]


class StreamDataset(torch.utils.data.IterableDataset):
    """A pipeline dealt to this rank's DataLoader workers; see :func:`as_iterable_dataset`."""

    def __init__(self, pipe: Any, *, rank: int | None = None, world_size: int | None = None,
                 uneven: Uneven = "pad", to_tensors: bool = True,
                 length: int | Callable[[int], int] | None = None) -> None:
        if uneven not in UNEVEN_MODES:
            raise ConfigError(f"uneven={uneven!r}: choose one of {UNEVEN_MODES}")
        if type(to_tensors).__name__ not in ("bool", "bool_"):  # numpy's bool too
            raise ConfigError(f"to_tensors={to_tensors!r}: give True or False")
        self.pipe = as_source(pipe)
        self._ranks = Ranks(rank, world_size)  # the group's once it exists (ranks.py)
        self.uneven: Uneven = uneven
        self.to_tensors = bool(to_tensors)
        self.length = check_length(length)
        self._schema = source_schema(self.pipe)
        # Now: the workers' pickle carries it (a spawned one lacks __main__'s globals)
        with contextlib.suppress(Exception):
            self._fingerprint()
        self._control = Control()
        self._next = Plan(start_epoch(self.pipe), 0)  # main: where its next iteration starts
        self._control.set(self._next.epoch, 0)
        self._loaded: Plan | None = None  # from load_state_dict, kept by a matching set_epoch
        self._cursor: Cursor | None = None
        self._local: dict[str, Any] | None = None  # a worker's own restored state
        self._device: Any = None  # the to_device loader driving this dataset (device.py)
    rank = property(lambda self: self._ranks.get()[0], doc="This process's rank.")
    world_size = property(lambda self: self._ranks.get()[1], doc="Processes in the job.")

    def __getstate__(self) -> dict[str, Any]:  # workers: no to_device link (thread, locks)
        self._ranks.get()  # a spawned worker has no process group to take them from
        return {**self.__dict__, "_device": None}

    def __repr__(self) -> str:
        return (f"StreamDataset(rank={self.rank}, world_size={self.world_size}, "
                f"uneven={self.uneven!r}, next={self._next})")

    def set_epoch(self, epoch: int) -> None:
        """Iterate epoch ``epoch`` next (in every worker, persistent ones too). A state loaded
        in that epoch keeps its position until the epoch starts, so ``ds.set_epoch(epoch)``
        resumes exactly however often it is called; another epoch drops it."""
        epoch = check_count("set_epoch", "epoch", epoch)
        self._device = None
        self._follow_workers()  # a plain DataLoader's workers began the loaded epoch: used up
        if self._loaded is None or self._loaded.epoch != epoch:
            self._loaded = None
        self._set_plan(self._loaded or Plan(epoch, 0))

    def _set_plan(self, plan: Plan) -> None:
        self._next = plan
        self._cursor = None
        self._control.set(plan.epoch, plan.position)

    def _fingerprint(self) -> str | None:
        """The pipeline's short fingerprint, as its own states carry it (None: not known)."""
        return str(self.pipe.fingerprint())[:16] if callable(getattr(
            self.pipe, "fingerprint", None)) else None

    def state_dict(self) -> dict[str, Any]:
        """A small cursor: ``{"epoch", "position", "pipeline"}`` (plus the consumer, inside a
        worker); ``"pipeline"`` is the fingerprint :meth:`load_state_dict` checks. In the main
        process it counts what the trainer consumed: when this process iterates the dataset
        (``num_workers=0``) or a :class:`StatefulLoader` drives it, and through
        :func:`to_device` (what the loop received, not what was copied ahead). A plain
        DataLoader's workers read ahead unseen: its state is refused (ConfigError)."""
        device = self._device
        if device is not None and torch.utils.data.get_worker_info() is None:
            received = device.received_state()
            if received is not None:
                return with_sources(dict(received), self.pipe)
        return with_sources(self.live_state(), self.pipe)

    def live_state(self) -> dict[str, Any]:
        """The state as this process counts it, items copied ahead by to_device included."""
        cur, fp = self._cursor, self._fingerprint()
        if (info := torch.utils.data.get_worker_info()) is not None:
            if cur is None:  # world_size: to count steps a loader took before a snapshot
                plan = self._control.plan if self._local is not None else \
                    self._control.upcoming(info.id, int(info.seed) - info.id)
                return worker_state(plan.epoch, plan.position, fp, world_size=self.world_size)
            d = cur.deal
            return worker_state(
                cur.epoch, d.start, fp, world_size=d.world_size, rank=cur.rank,
                num_workers=d.workers, worker=cur.worker, yielded=cur.yielded, done=cur.done,
            )
        last = self._control.last()  # workers' last iteration (a later epoch: cur is stale)
        if cur is None or (last is not None and last.epoch > cur.epoch):
            if last is not None:
                raise unseen_consumption()
            return worker_state(self._next.epoch, self._next.position, fp)
        if cur.ended(self.pipe, self.length):
            return worker_state(cur.epoch + 1, 0, fp)
        return worker_state(cur.epoch, cur.deal.position_after(cur.consumed), fp)

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        """Continue from ``state``: this dataset's, or a whole StatefulDataLoader's. Any
        number of ranks and workers can resume a cursor. A worker's own state (what
        StatefulDataLoader hands back to each worker when ``num_workers`` is unchanged)
        resumes that worker exactly. Another pipeline's state (another seed, version or
        operator) is refused unless ``strict=False`` (a function fixed, the same order)."""
        in_worker = torch.utils.data.get_worker_info() is not None
        plan, consumer = from_state(state, self._fingerprint() if strict else None, self.pipe)
        if in_worker:
            if consumer is None and plan is not None:
                consumer = {"epoch": plan.epoch, "position": plan.position}
            self._local = consumer
            return
        if plan is None:
            raise ConfigError(
                "this is one worker's state of a multi-worker loader and says nothing about "
                "the others; load the whole loader state (loader.state_dict()) instead"
            )
        refuse_past_end(self.pipe, plan.epoch, plan.position, self.length, max(
            self.world_size, int(state.get("world_size", 1)) if isinstance(state, dict) else 1))
        self._loaded = plan
        self._device = None
        self._set_plan(plan)

    def check(self, num_workers: int = 0) -> CheckReport | None:
        """The pipeline's feasibility report for this machine's readers, with no I/O.

        Readers: ``num_workers`` (at least one) per rank, times ``LOCAL_WORLD_SIZE`` ranks on
        this machine (set by torchrun; default 1). None when the pipeline cannot tell."""
        check = getattr(self.pipe, "check", None)
        return None if check is None else check(consumers=max(num_workers, 1)
                                                 * local_world_size())

    # --- iteration -----------------------------------------------------------------------

    def _begin(self, info: Any) -> tuple[Plan, int]:
        """This process's plan for the iteration starting now, and items already yielded."""
        self._undrive()
        if info is None:
            self._follow_workers()
            plan, self._loaded = self._next, None  # started: a loaded position is used up
            self._next = Plan(plan.epoch + 1, 0)
            self._control.set(plan.epoch + 1, 0)  # a loader's workers go on after it
            return plan, 0
        worker, workers = info.id, info.num_workers
        local, self._local = self._local, None
        restored, yielded = None, 0
        if local is not None:
            if "num_workers" in local:
                # Ranks run in lockstep, so another rank's worker state (rank 0's checkpoint
                # loaded everywhere) holds this rank's counts too: only the layout must match.
                if (local["num_workers"], local["worker"], local["world_size"]) != (
                    workers, worker, self.world_size,
                ):
                    raise ConfigError(
                        "a worker state from another layout "
                        f"(world_size={local['world_size']}, num_workers={local['num_workers']}) "
                        f"cannot resume worker {worker} of {workers} at world_size="
                        f"{self.world_size}; load the whole loader state into the dataset "
                        "(ds.load_state_dict(loader.state_dict())) before building the loader"
                    )
                yielded = int(local["yielded"])
            restored = Plan(int(local["epoch"]), int(local["position"]))
        # One base seed per DataLoader iterator: it tells this iteration's workers apart from
        # the last one's (control.py).
        return self._control.begin(worker, int(info.seed) - worker, restored), yielded

    def _begin_driven(self, workers: int) -> Cursor:
        """Start an iteration whose consumption a loader in this process counts."""
        refuse_loaded(self.pipe)  # (a state loaded into the pipeline after it was wrapped)
        self._undrive()
        older = self._cursor
        self._follow_workers()
        plan, self._loaded = self._next, None  # started: a loaded position is used up
        self._set_plan(plan)
        self._next = Plan(plan.epoch + 1, 0)
        self._cursor = cursor = Cursor(plan.epoch, self._deal(plan, workers), self.rank, 0)
        supersede(older)
        return cursor

    def _follow_workers(self) -> None:
        """Main process: after epochs a plain DataLoader's workers ran, continue after them."""
        last = self._control.last()  # None: none since this process set the plan
        if last is not None:
            self._loaded = None  # the workers started (and used) it
            self._set_plan(Plan(last.epoch + 1, 0))

    def _undrive(self) -> None:
        """An iteration that a to_device loader's thread did not start ends its link."""
        device = self._device
        if device is not None and not device.drives(threading.current_thread()):
            self._device = None

    def _deal(self, plan: Plan, workers: int) -> Deal:
        return deal_of(self.pipe, plan, workers, self.world_size, self.uneven, self.length)

    def __iter__(self) -> Iterator[Any]:
        # The iteration begins (and takes its epoch) at the first next(), not here: torchdata
        # restoring an ended epoch makes an iterator it drops unread, which must not count.
        # The arguments are checked now, though (and a state loaded into the pipeline).
        refuse_loaded(self.pipe)
        info = torch.utils.data.get_worker_info()
        self._deal(self._next if info is None else self._control.plan,
                   0 if info is None else info.num_workers)
        return Guarded(self._iterate(info), "torch dataset")

    def _iterate(self, info: Any) -> Iterator[Any]:
        worker, workers = (0, 0) if info is None else (info.id, info.num_workers)
        freeze_inherited(info)  # a worker: the parent's objects out of its collector
        set_local_consumers(max(workers, 1) * local_world_size())  # (a full shuffle's check)
        older = self._cursor
        plan, yielded = self._begin(info)
        cursor = Cursor(plan.epoch, self._deal(plan, workers), self.rank, worker, yielded)
        self._cursor = cursor
        supersede(older if info is None else None)  # (a worker's copy has no other)
        yield from stream_share(cursor, self.pipe, self._convert, main=info is None)

    def _convert(self, item: Any, main: bool) -> Any:
        if self.to_tensors:
            return to_torch(item, self._schema)
        return item if main else compact(item)  # a worker pickles it to the main process

    def __len__(self) -> int:
        """Items this rank delivers in its next iteration (TypeError when unknown)."""
        return self._ranks.counted(lambda: rank_length(
            self.pipe, self._next, self.rank, self.world_size, self.uneven, self.length))


def as_iterable_dataset(
    pipe: Any,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    uneven: Uneven = "pad",
    to_tensors: bool = True,
    length: int | Callable[[int], int] | None = None,
) -> StreamDataset:
    """A torch IterableDataset that streams ``pipe`` exactly once per epoch across all consumers.

    Use it with ``DataLoader(ds, batch_size=None, num_workers=N)`` (batch in the pipeline:
    ``pipe.batch(n)``), or with :class:`StatefulLoader` / torchdata's StatefulDataLoader to
    checkpoint mid-epoch.

    Args:
        pipe: a dload_arrow pipeline or Dataset, from the start of the epoch it is in.
        rank: this process's rank; default torch.distributed, else ``RANK``, else 0.
        world_size: number of ranks; default torch.distributed, else ``WORLD_SIZE``, else 1.
        uneven: how ranks get equal lengths when they cannot split the epoch evenly:
            ``"pad"`` repeats the epoch's first items, ``"drop"`` drops the last items,
            ``"none"`` delivers every item once and lets rank lengths differ by one.
        to_tensors: convert items (samples, record batches) to tensors; False yields the
            pipeline's items unchanged.
        length: the epoch's item count (an int or a function of the epoch) when the pipeline
            cannot tell without reading (after a filter); needed by ``"pad"``/``"drop"``.

    Returns:
        The dataset; ``set_epoch``, ``state_dict`` and ``load_state_dict`` drive it.
    """
    return StreamDataset(pipe, rank=rank, world_size=world_size, uneven=uneven,
                         to_tensors=to_tensors, length=length)
