"""One consumer's iteration of a :class:`~dload_arrow.torch.dataset.StreamDataset`.

A :class:`Cursor` is where one (rank, worker) consumer is in its :class:`Deal` of an epoch;
:func:`stream_share` yields that consumer's items from the pipeline (its strided share, then
the padding ``uneven="pad"`` adds) and counts them in the cursor, which the dataset's
``state_dict`` reads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from dload_arrow.errors import ConfigError, user_stacklevel
from dload_arrow.plan.partition import Deal, Uneven
from dload_arrow.torch.control import Plan
from dload_arrow.torch.source import epoch_length, open_stream

__all__ = ["Cursor", "deal_of", "rank_length", "stream_share", "supersede"]

_END = object()


@dataclass
class Cursor:
    """One iteration in one process: its deal, and how far it got."""

    epoch: int
    deal: Deal
    rank: int
    worker: int
    yielded: int = 0  # items this consumer produced (from the deal's start)
    consumed: int = 0  # items of the rank the trainer took (main process only)
    done: bool = False
    total: int | None = -1  # the epoch's len() where the deal has no end (-1: not asked yet)
    replaced: bool = False  # a newer iteration of the dataset in this process took over

    def check_current(self) -> None:
        """ConfigError when a newer iteration took over: state_dict() follows that one, so
        going on would leave the checkpoint describing items this loop never got."""
        if self.replaced:
            raise ConfigError(
                f"this iteration (epoch {self.epoch}) of the dataset was ended by a newer "
                "iter() of the same dataset or loader (a peek with next(iter(loader))?): "
                "state_dict() follows the newest, so a checkpoint would skip the rest of this "
                "epoch. For a look at the data while training, use the pipeline's head() or "
                "a second as_iterable_dataset(pipe)"
            )

    def ended(self, pipe: Any, length: Any) -> bool:
        """Whether the trainer took this rank's last item of the epoch: ``done``, or its
        next position is past the deal's end. A deal without an end (one rank, or
        ``uneven="none"``, without ``length=``) asks the pipeline's len() once per iteration
        (no read: None when only reading would tell), so a state taken right after the last
        item says the next epoch with one rank as with several; a pipeline of unknown length
        says so only once its iterator ends (seeing the end would read one more item)."""
        if self.done:
            return True
        deal, end = self.deal, self.deal.end
        if end is None:
            if self.total == -1:
                self.total = epoch_length(pipe, self.epoch, length)
            if self.total is None:
                return False
            end = max(self.total, deal.start)
        return deal.position_after(self.consumed) + self.rank >= end


def supersede(older: Cursor | None) -> None:
    """Main process: a new iteration of the dataset is what state_dict() counts from now, so
    an ``older`` one still going ends (its next item raises ConfigError, as a pipeline's)."""
    if older is not None and not older.done:
        older.replaced = True


def stream_share(
    cursor: Cursor, pipe: Any, convert: Callable[[Any, bool], Any], *, main: bool
) -> Iterator[Any]:
    """The items of ``cursor``'s share of the epoch from ``pipe``, padding included.

    Counts them in ``cursor`` as they go (``consumed`` too when ``main``: the trainer takes
    them in this process) and sets ``done`` at the end; ``convert(item, main)`` shapes each.
    """
    deal = cursor.deal
    step = deal.consumers
    real = deal.real_count(cursor.rank, cursor.worker)
    todo = None if real is None else max(real - cursor.yielded, 0)
    if todo != 0:
        first = deal.start + deal.consumer(cursor.rank, cursor.worker) + cursor.yielded * step
        stream = open_stream(pipe, cursor.epoch, first, step)
        for item in stream if todo is None else islice(stream, todo):
            if main:
                cursor.check_current()
            cursor.yielded += 1
            if main:
                cursor.consumed += 1
            yield convert(item, main)
        nxt = deal.start + deal.consumer(cursor.rank, cursor.worker) + cursor.yielded * step
        if (todo is not None and cursor.yielded == real and nxt == deal.total  # (QA eval66:
                and getattr(pipe, "endless", False) is not True  # cut without a word; an
                and next(stream, _END) is not _END):  # endless one is cut so: QA review66c)
            warnings.warn(
                f"epoch {cursor.epoch} has more items than its length ({deal.total}, from "
                "length= or the pipeline's len()): those from position "
                f"{deal.total} on were not delivered; pass the epoch's true length as length= "
                "(a where() view's is len(view))", stacklevel=user_stacklevel())
        _close(stream)
    size = None  # the epoch's true length, counted when it ended short of length=
    if real is not None and cursor.yielded < real:
        c = deal.consumer(cursor.rank, cursor.worker)
        nxt = deal.start + c + cursor.yielded * step  # its first position the epoch lacks
        size = _true_length(pipe, cursor.epoch, deal.start, nxt, step, cursor.yielded)
        if (max(size, deal.start) - deal.start) % step == c:  # one consumer in the job says it
            warnings.warn(
                f"epoch {cursor.epoch} has {size} item(s), fewer than its length "
                f"({deal.total}, from length= or the pipeline's len()); the missing positions "
                "repeat the epoch's items from its first, so every rank delivers the same "
                "number. Pass the epoch's true length as length=, or leave length= out and "
                "pass uneven='none' (rank lengths may then differ by one)", stacklevel=2)
        # by global position, as padding is: the same whatever the workers, ranks or resume
        missing = [nxt + k * step for k in range(real - cursor.yielded)]
        yield from _from_head(cursor, pipe, convert, main, [p - size for p in missing], size)
    pad = deal.padding(cursor.rank, cursor.worker)
    if real is not None and cursor.yielded > real:
        pad = pad[cursor.yielded - real :]
    if len(pad):
        yield from _from_head(cursor, pipe, convert, main, [int(i) for i in pad], size)
    cursor.done = True


def _close(stream: Iterator[Any]) -> None:
    """Close a pipeline's iterator now (its readers and threads), not at garbage collection."""
    close = getattr(stream, "close", None)
    if close is not None:
        close()


def _count(pipe: Any, epoch: int, first: int, limit: int) -> int:
    """Items of epoch ``epoch`` at positions ``first`` to ``first + limit - 1``."""
    stream = open_stream(pipe, epoch, first, 1)
    n = sum(1 for _ in islice(stream, max(limit, 0)))
    _close(stream)
    return n


def _true_length(pipe: Any, epoch: int, start: int, nxt: int, step: int, yielded: int) -> int:
    """The item count of an epoch whose consumer found no item at position ``nxt``, after
    ``yielded`` items (the last at ``nxt - step``) from the deal's ``start``."""
    lo = nxt - step + 1 if yielded else start
    n = _count(pipe, epoch, lo, nxt - lo)
    if n or yielded or start == 0:
        return lo + n
    return _count(pipe, epoch, 0, start)  # a resume past the epoch's end: count it all


def _from_head(cursor: Cursor, pipe: Any, convert: Callable[[Any, bool], Any], main: bool,
               indices: list[int], size: int | None = None) -> Iterator[Any]:
    """The epoch's items at ``indices`` (modulo ``size``, or wrapping around an epoch
    shorter than them), counted in ``cursor``: the items that keep ranks equal. Only the
    items asked for are kept while the head of the epoch is read."""
    if size == 0:
        raise ConfigError(f"epoch {cursor.epoch} is empty but its length (len() or length=) "
                          "promised items; pass the epoch's true length")
    if size is not None:
        indices = [i % size for i in indices]
    want, got, n = set(indices), {}, 0
    stream = open_stream(pipe, cursor.epoch, 0, 1)
    for n, item in enumerate(islice(stream, max(indices) + 1), 1):
        if n - 1 in want:
            got[n - 1] = item
    _close(stream)
    if len(got) < len(want):  # the epoch is shorter than an index: wrap around it
        yield from _from_head(cursor, pipe, convert, main, indices, n)
        return
    for idx in indices:
        if main:
            cursor.check_current()
        cursor.yielded += 1
        if main:
            cursor.consumed += 1
        yield convert(got[idx], main)


def deal_of(pipe: Any, plan: Plan, workers: int, world_size: int, uneven: Uneven,
            length: Any) -> Deal:
    """How epoch ``plan`` from its position is dealt to ``world_size`` ranks of ``workers``."""
    total = None
    if length is None and getattr(pipe, "endless", False) is True:
        uneven = "none"  # a stream that never ends has no end to pad or cut
    # A given length is the epoch's count whatever the ranks and uneven=, so len(), the
    # items dealt and a checkpoint's position agree (uneven="none" then cuts or fills to it).
    if (world_size > 1 and uneven != "none") or length is not None:
        total = epoch_length(pipe, plan.epoch, length)
        if total is None:
            raise ConfigError(
                f"uneven={uneven!r}{' (the default)' if uneven == 'pad' else ''} over "
                f"{world_size} ranks needs the epoch's length, and this pipeline's length is "
                "only known by reading it (a filter? a source that may end or not?); pass "
                "length= (the epoch's item count: for a where() view, len(view) counts its rows, "
                "and after .batch(n) the items are ceil(len(view) / n) batches), uneven='none' "
                "(every item once, ranks may then differ in length by one), or end the "
                "pipeline with .take(n) over an endless source (from_iterable(fn, finite=False) "
                "declares one)"
            )
    return Deal(world_size, workers, plan.position, total, uneven)


def rank_length(pipe: Any, plan: Plan, rank: int, world_size: int, uneven: Uneven,
                length: Any) -> int:
    """Items rank ``rank`` delivers in the iteration ``plan`` starts (TypeError: unknown)."""
    deal = deal_of(pipe, plan, 0, world_size, uneven, length) if world_size > 1 else None
    if deal is None or deal.rank_length is None:
        total = epoch_length(pipe, plan.epoch, length)
        if total is None:
            raise TypeError("this pipeline's length is only known by reading it")
        deal = Deal(world_size, 0, plan.position, total, uneven)
    n = deal.rank_length
    assert n is not None
    return len(deal.rank_positions(rank)) if uneven == "none" else n
