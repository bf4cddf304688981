"""Abandoning a reader: its waits on the cache give up once nobody will use what they wait for.

A reader's downloads may wait for room in the cache (held by other readers) or for another
reader's download of the same shard to finish. When the pipeline that owns the reader drops
it while a window is still being made from it (an epoch left early), it sets the reader's
abort event; waits that run under :func:`abort_scope` of that event raise :class:`Abandoned`
at their next poll. The reader's threads then unwind, close it and release its holds, instead
of waiting for room that the holds of other abandoned readers keep taken: with a budget of a
few shards and every epoch left after a few batches, those waits closed a cycle and the loop
hung (QA longrun54).

The scope is per thread: a fetch runs under its fetcher's event on whichever thread runs it
(the reader's, or a download thread), so another reader's waits are never cut short.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Abandoned", "abort_scope", "check_abandoned"]

_local = threading.local()


class Abandoned(RuntimeError):
    """A wait given up because the reader it was for was closed (never seen by a user: the
    iteration that closed the reader discards its windows)."""


@contextmanager
def abort_scope(event: threading.Event) -> Iterator[None]:
    """Run the block's waits (this thread's) under ``event``: once it is set, they raise."""
    before = getattr(_local, "event", None)
    _local.event = event
    try:
        yield
    finally:
        _local.event = before


def check_abandoned(what: str) -> None:
    """Raise :class:`Abandoned` if this thread waits for a reader whose owner left."""
    event: threading.Event | None = getattr(_local, "event", None)
    if event is not None and event.is_set():
        raise Abandoned(f"{what}: the reader that asked for it was closed")
