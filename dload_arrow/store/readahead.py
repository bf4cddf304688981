"""Run an iterator in a background thread, a bounded number of items ahead of its consumer.

Commit uses it to overlap building Arrow batches from Python objects (which holds the GIL)
with Parquet encoding, zstd and sha256 (which release it), so ingest uses two cores.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, TypeVar

from dload_arrow.waits import queue_get

__all__ = ["ReadAhead", "Starving", "read_ahead"]

T = TypeVar("T")
_DONE = object()


class Starving:
    """Whether a read-ahead's consumer spends most of its time waiting for the producer.

    The share of wall time between the consumer's recent takes that it spent blocked (a
    moving average over about 8 takes). Above ``threshold`` a core sits idle while the
    producer works, so a helper for the producer costs the consumer nothing.
    """

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold
        self._share = 0.0
        self._last: float | None = None

    def took(self, waited: float) -> None:
        """Record one take that blocked for ``waited`` seconds (0: the item was ready)."""
        now = time.perf_counter()
        if self._last is not None and now > self._last:
            self._share += (min(1.0, waited / (now - self._last)) - self._share) / 8
        self._last = now

    def __bool__(self) -> bool:
        return self._share > self.threshold


class ReadAhead(Iterator[T]):
    """The consumer's side of :func:`read_ahead`: an iterator whose ``close()`` waits for the
    producer, while a garbage-collected one does not (see ``_consume``)."""

    def __init__(self, items: Iterable[T], depth: int, starving: Starving | None,
                 abort: Callable[[], None] | None = None) -> None:
        self._explicit = [False]
        self._gen = _consume(items, depth, starving, self._explicit, abort)
        self._abort = abort

    def abort(self) -> None:
        """Tell the producer's waits to give up (read/abandon.py): the owner will close this
        without reading on, and must not wait for an item that waits for room the holds of
        other abandoned readers keep taken. A no-op for a producer without such waits."""
        if self._abort is not None:
            self._abort()

    def __next__(self) -> T:
        return next(self._gen)

    def close(self) -> None:
        """Stop the producer at its next item; return once it has closed ``items``."""
        self._explicit[0] = True
        self._gen.close()


def read_ahead(items: Iterable[T], depth: int = 2, starving: Starving | None = None,
               abort: Callable[[], None] | None = None) -> ReadAhead[T]:
    """Yield ``items`` in order, produced by a background thread at most ``depth`` ahead.

    An exception in the producer is re-raised in the consumer at the same point of the
    stream; closing the consumer early stops the producer at its next item and closes
    ``items`` (a generator's ``finally`` runs) before the close returns. ``starving``, when
    given, records for the producer whether the consumer had to wait for each item;
    ``abort``, what :meth:`ReadAhead.abort` calls.
    """
    return ReadAhead(items, depth, starving, abort)


def _consume(items: Iterable[T], depth: int, starving: Starving | None,
             explicit: list[bool], abort: Callable[[], None] | None = None
             ) -> Generator[T, None, None]:
    q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    source = iter(items)

    def produce() -> None:
        _LIVE[threading.current_thread()] = stop
        try:
            for item in source:
                while not stop.is_set():
                    try:
                        q.put((True, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as e:  # re-raised in the consumer
            q.put((False, e))
            return
        finally:
            close = getattr(source, "close", None)
            try:
                if close is not None:  # a generator's own cleanup runs here, in its thread
                    close()
            finally:
                _LIVE.pop(threading.current_thread(), None)
        q.put(_DONE)

    thread = threading.Thread(target=produce, name="dload-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            t0 = time.perf_counter()
            try:
                got = queue_get(q)
            except BaseException:  # a Ctrl-C while waiting: nobody will take the item
                if abort is not None:
                    abort()
                raise
            if starving is not None:
                starving.took(time.perf_counter() - t0)
            if got is _DONE:
                return
            assert isinstance(got, tuple)
            ok, value = got
            if not ok:
                raise value
            yield value
    finally:
        stop.set()
        # Only an explicit close waits. A garbage-collected consumer is finalized on whatever
        # thread the collection ran, which may hold a lock the producer's cleanup needs
        # (concurrent.futures' global lock, inside a thread's start, while the fetcher's
        # callback thread holds its own lock and waits for that one): there it must not wait.
        # The producer stops at its next item by itself and closes its source.
        here = threading.current_thread()
        while (explicit[0] and thread.is_alive() and thread is not here
               and not _worker(here)):
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)


# Producers still running, and their stop events: an abandoned stream's producer is not
# waited for (see ``_consume``), so at exit they are stopped and joined, while the interpreter
# still runs: a thread left inside Arrow's C++ when it finalizes aborts the process
# ("terminate called without an active exception").
_LIVE: dict[threading.Thread, threading.Event] = {}
_EXIT_WAIT = 5.0  # seconds for all producers together


@atexit.register
def _stop_producers() -> None:
    for stop in list(_LIVE.values()):
        stop.set()
    deadline = time.monotonic() + _EXIT_WAIT
    for thread in list(_LIVE):
        thread.join(max(0.0, deadline - time.monotonic()))


def _worker(thread: threading.Thread) -> bool:
    """Whether ``thread`` is one of dload's own worker threads (read-ahead, decode, fetch,
    window): they close a stream only by finalizing an abandoned one, never explicitly."""
    return thread.name.startswith("dload-")
