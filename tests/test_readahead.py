"""read_ahead keeps order, propagates errors in place, and stops its producer when closed."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dload_arrow.store.readahead import read_ahead


@given(st.lists(st.integers()), st.integers(min_value=1, max_value=4))
def test_read_ahead_yields_every_item_in_order(items: list[int], depth: int) -> None:
    assert list(read_ahead(iter(items), depth)) == items


def test_an_error_in_the_producer_is_raised_after_the_items_before_it() -> None:
    def gen() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("bad sample 3")

    got = []
    with pytest.raises(ValueError, match="bad sample 3"):
        for x in read_ahead(gen()):
            got.append(x)
    assert got == [1, 2]


def test_closing_the_consumer_stops_the_producer() -> None:
    produced = []

    def gen() -> Iterator[int]:
        for i in range(10_000):
            produced.append(i)
            yield i

    before = set(threading.enumerate())  # readers other tests dropped stop when collected
    it = read_ahead(gen(), depth=2)
    assert next(it) == 0
    it.close()
    assert not any(t.name == "dload-read-ahead" and t.is_alive() and t not in before
                   for t in threading.enumerate())
    assert len(produced) < 10


def test_closing_the_consumer_runs_the_sources_cleanup_before_returning() -> None:
    # iter_units relies on this: the decoding generator's finally releases the cache holds,
    # and it must have run (on the producer's thread) by the time close() returns.
    cleaned: list[str] = []

    def source() -> Iterator[int]:
        try:
            yield from range(1000)
        finally:
            cleaned.append(threading.current_thread().name)

    it = read_ahead(source(), depth=2)
    assert next(it) == 0
    it.close()
    assert cleaned == ["dload-read-ahead"]


def test_a_stream_finalized_on_a_worker_thread_does_not_wait_for_its_producer() -> None:
    """An abandoned reader may be garbage-collected on the decoding threads, which
    the producer's cleanup (Decoders.close) waits for: waiting there would deadlock (a
    hang seen at the suite's exit). On dload's worker threads the close returns at once and
    the producer still closes its source by itself."""
    release, closed = threading.Event(), threading.Event()

    def source() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            release.wait(10)  # like Decoders.close waiting for its worker thread
            closed.set()

    stream = read_ahead(source(), depth=1)
    assert next(stream) == 0
    returned = threading.Event()

    def finalize() -> None:
        stream.close()
        returned.set()

    worker = threading.Thread(target=finalize, name="dload-decode_0")
    worker.start()
    assert returned.wait(3)  # it waited for the producer before
    worker.join()
    release.set()
    assert closed.wait(5)  # the producer still ran the source's cleanup


def test_a_garbage_collected_stream_does_not_wait_for_its_producer() -> None:
    """A dropped reader is finalized on whatever thread the collection runs, which may hold a
    lock the producer's cleanup needs (concurrent.futures' global lock inside a thread's
    start, wanted by the fetcher's callback while it holds the fetcher's lock: a hang seen
    once under load). Only an explicit close() waits; the producer still cleans up."""
    release, closed = threading.Event(), threading.Event()

    def source() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            release.wait(10)
            closed.set()

    holder = {"stream": read_ahead(source(), depth=1)}
    assert next(holder["stream"]) == 0
    returned = threading.Event()

    def drop() -> None:
        holder.clear()  # the last reference: finalized here, on a thread that is not dload's
        returned.set()

    t = threading.Thread(target=drop, name="some-library-thread")
    t.start()
    assert returned.wait(3)
    t.join()
    release.set()
    assert closed.wait(5)


def test_producers_of_dropped_streams_are_stopped_at_exit(tmp_path: Path) -> None:
    """A dropped stream's producer is not waited for, so the interpreter stops and joins it
    at exit, while it still runs: a thread left in Arrow's C++ at finalization aborts."""
    code = (
        "import gc, sys, time\n"
        "from dload_arrow.store.readahead import read_ahead\n"
        "def source():\n"
        "    try:\n"
        "        yield from range(10**9)\n"
        "    finally:\n"
        "        time.sleep(0.5)  # a slow cleanup: without the exit hook, exit comes first\n"
        "        print('source closed', flush=True)\n"
        "s = read_ahead(source(), depth=1)\n"
        "next(s)\n"
        "del s\n"
        "gc.collect()\n"
        "print('exiting', flush=True)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["exiting", "source closed"]
