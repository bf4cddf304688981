"""One consumer's iteration of a :class:`~dload_arrow.torch.dataset.StreamDataset`.

A :class:`Cursor` is where one (rank, worker) consumer is in its :class:`Deal` of an epoch;
:func:`stream_share` yields that consumer's items from the pipeline (its strided share, then
the padding ``uneven="pad"`` adds) and counts them in the cursor, which the dataset's
``state_dict`` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from dload_arrow.plan.partition import Deal
from dload_arrow.torch.source import open_stream

__all__ = ["Cursor", "stream_share"]


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
            cursor.yielded += 1
            if main:
                cursor.consumed += 1
            yield convert(item, main)
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    pad = deal.padding(cursor.rank, cursor.worker)
    if real is not None and cursor.yielded > real:
        pad = pad[cursor.yielded - real :]
    if len(pad):
        head = list(islice(open_stream(pipe, cursor.epoch, 0, 1), int(pad.max()) + 1))
        for idx in pad:
            cursor.yielded += 1
            if main:
                cursor.consumed += 1
            yield convert(head[int(idx)], main)
    cursor.done = True
