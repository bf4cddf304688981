"""Waits on other threads that Ctrl-C can stop: queues, futures, conditions.

Python runs its SIGINT handler on the main thread between bytecodes, and a main thread
blocked in an untimed ``Queue.get()``, ``Future.result()`` or ``Condition.wait()`` is not
woken by the signal here (the lock underneath does not return on EINTR): a Ctrl-C while a
read waited for a stalled download or for cache room was held back until the wait ended,
minutes later, and was then lost (QA nb58). On the main thread these waits run in short
timed slices, so the handler runs within :data:`SLICE` seconds; on any other thread they
stay untimed (no signal handler runs there anyway).
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from typing import Any, TypeVar

__all__ = ["SLICE", "cond_wait", "future_result", "queue_get"]

T = TypeVar("T")

#: Seconds between the main thread's looks at pending signals while it waits.
SLICE = 0.2


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


def queue_get(q: queue.Queue[T]) -> T:
    """``q.get()``, interruptible by Ctrl-C on the main thread."""
    if not _main():
        return q.get()
    while True:
        try:
            return q.get(timeout=SLICE)
        except queue.Empty:
            continue


def future_result(fut: concurrent.futures.Future[T]) -> T:
    """``fut.result()``, interruptible by Ctrl-C on the main thread."""
    if not _main():
        return fut.result()
    while True:
        try:
            return fut.result(timeout=SLICE)
        except concurrent.futures.TimeoutError:
            if fut.done():  # finished meanwhile, or its work raised TimeoutError itself
                return fut.result()


def cond_wait(cond: threading.Condition | Any) -> None:
    """``cond.wait()`` (the caller holds ``cond`` and re-checks its predicate, as for any
    wait that may wake spuriously), interruptible by Ctrl-C on the main thread."""
    if _main():
        cond.wait(SLICE)
    else:
        cond.wait()
