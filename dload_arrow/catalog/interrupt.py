"""Run a DuckDB query so that Ctrl-C stops it at once, as a KeyboardInterrupt.

While DuckDB executes, the main thread is inside C++ and Python's SIGINT handler waits for
it: a long query ran on for seconds after Ctrl-C, then failed with ``RuntimeError("Query
interrupted")``, which the CLI reported as a bug. The query runs on a helper thread instead;
the main thread waits in short, interruptible joins, and on Ctrl-C asks DuckDB to stop
(``connection.interrupt()``) and raises KeyboardInterrupt (the CLI's exit 130).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa

from dload_arrow.catalog.params import per_statement
from dload_arrow.catalog.sql_types import mark_types

__all__ = ["interruptible", "run_query"]

T = TypeVar("T")


def run_query(connection: Any, statements: list[Any], query: str, params: dict[str, Any]
              ) -> pa.Table:
    """The result of ``query`` (parsed as ``statements``) with ``params``: every statement
    run to its end, the last one's rows as a table (empty for CREATE, SET...); Ctrl-C stops
    it (:func:`interruptible`)."""

    def execute() -> pa.Table:
        if len(statements) > 1:  # each with its own parameters (see per_statement)
            *first, last = zip(statements, per_statement(statements, params), strict=True)
            for s, bound in first:  # run to its end, rows unread (fetched before 2.0)
                done = connection.execute(s.query, bound or None)
                getattr(done, "complete", done.fetchall)()
            rel = connection.sql(last[0].query, params=last[1] or None)
        else:
            rel = connection.sql(query, params=params or None)
        # None: a statement without a result (CREATE, SET, ...)
        return pa.table({}) if rel is None else mark_types(rel.to_arrow_table(), rel.types)

    return interruptible(connection, execute)


def interruptible(connection: Any, work: Callable[[], T]) -> T:
    """``work()`` (DuckDB calls on ``connection``) with Ctrl-C stopping it at once."""
    if threading.current_thread() is not threading.main_thread():
        return _unmasked(work)  # only the main thread gets SIGINT: nothing to wait for
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            if not stop.is_set():  # (interrupted while this thread started: nothing to run)
                out["value"] = work()
        except BaseException as e:  # carried to the caller's thread, without the locals of
            traceback.clear_frames(e.__traceback__)  # its frames: a pending DuckDB result
            out["error"] = e  # kept alive there left the connection busy (QA sql60)
        finally:
            done.set()

    # Its own end, not thread.is_alive(): a signal handler's exception inside join() marks a
    # running thread stopped (CPython's bpo-45274 handling), and no interrupt was sent then.
    stop, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=run, name="dload-sql", daemon=True)
    try:
        thread.start()  # (inside: an exception while it starts stops the query too)
        while not done.wait(0.05):
            pass
    except BaseException:  # Ctrl-C, or a signal handler's exception (a time limit, QA sql60):
        _stop(connection, thread, stop, done)  # the query stops, the connection is free
        raise
    if "error" in out:
        if _interrupted(out["error"]):
            raise KeyboardInterrupt from None
        raise out["error"]
    return out["value"]  # type: ignore[no-any-return]


_STOP_TRIES = 20


def _stop(connection: Any, thread: threading.Thread, stop: threading.Event,
          done: threading.Event) -> None:
    """Interrupt the query of ``thread``, wait for it and for the connection: to the end,
    whatever second exception comes meanwhile (Ctrl-C twice, a repeating timer: QA
    review60f), which the caller's first one stands for."""
    for _ in range(_STOP_TRIES):  # (bounded: an interrupt() that always fails ends too)
        try:
            stop.set()
            while thread.ident is not None and not done.is_set():
                connection.interrupt()  # again while it runs on: one sent before the query
                done.wait(1.0)  # began in DuckDB is lost
            _settle(connection)
            return
        except BaseException:  # the stop goes on; the first exception is the one raised
            continue


def _settle(connection: Any, wait: float = 5.0) -> None:
    """Wait until an interrupted connection takes calls again: DuckDB frees it a moment after
    the interrupted call returns, and a query sent at once failed "connection is busy"."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            connection.execute("SELECT 1").fetchall()
            return
        except Exception as e:  # only "busy" is waited out
            if "busy" not in str(e).lower():
                return
            time.sleep(0.01)


def _unmasked(work: Callable[[], T]) -> T:
    try:
        return work()
    except RuntimeError as e:
        if _interrupted(e):
            raise KeyboardInterrupt from None
        raise


def _interrupted(e: BaseException) -> bool:
    """DuckDB's answer to an interrupt: ``RuntimeError``/``InterruptException`` "Query
    interrupted" (not a ``duckdb.Error`` in every build)."""
    return "interrupted" in str(e).lower() and type(e).__name__ in (
        "RuntimeError", "InterruptException")
