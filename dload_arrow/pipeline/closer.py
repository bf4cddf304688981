"""Close dropped iterations on a thread of their own, so a finalizer never waits.

A pipeline holds its live iteration weakly: a strong reference both ways was a cycle, and a
new pipeline each epoch left with ``break`` kept every old iteration's threads, open files,
decoded windows and cache holds until the garbage collector ran (GBs over epochs; on S3 with
a small budget the next epoch waited for room it held itself).

A dropped iteration must still stop its read-ahead and decoding threads, and closing waits
for them. Its ``__del__`` runs wherever the last reference went, garbage collection inside
another thread's start included, where a wait can deadlock (a join needs the lock the
starting thread holds). So ``__del__`` only puts the iteration's cursor on a
``queue.SimpleQueue``, whose ``put`` is reentrant and safe in finalizers, and this module's
daemon thread closes it. The thread is started by :func:`ensure_running`, called where an
iteration starts (never from a finalizer), once per process: a forked DataLoader worker
starts its own.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref
from contextlib import suppress
from typing import Any

__all__ = ["ensure_running", "hand_off", "nothing", "track"]

# (pid, queue, thread) of this process's closer; replaced in a forked child.
_CLOSER: list[Any] = [None, None, None]
_START = [threading.Lock()]


def _after_fork() -> None:
    _START[0] = threading.Lock()  # a fork while another thread held it would leave it held


os.register_at_fork(after_in_child=_after_fork)


def nothing() -> None:
    """A pipeline's weak reference to its live iteration when it has none (a module
    function: a pipeline pickles into DataLoader workers)."""


def ensure_running() -> None:
    """Start this process's closing thread if it is not running (not from a finalizer)."""
    pid, _, thread = _CLOSER
    if pid == os.getpid() and thread is not None and thread.is_alive():
        return
    with _START[0]:
        pid, _, thread = _CLOSER
        if pid == os.getpid() and thread is not None and thread.is_alive():
            return
        q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        thread = threading.Thread(target=_run, args=(q,), name="dload-closer", daemon=True)
        thread.start()
        _CLOSER[:] = [os.getpid(), q, thread]
        if _HOOKED[0] != os.getpid():
            _HOOKED[0] = os.getpid()
            atexit.register(_at_exit)  # (after Python joined the script's own threads,
            # which may still be reading: QA review61d)


def track(iteration: Any) -> None:
    """Remember a running iteration: one still open when the interpreter exits is closed
    first (see :func:`_at_exit`)."""
    _OPEN.add(iteration)


# At exit, CPython ends a daemon thread that asks for the GIL back with pthread_exit, whose
# unwinding through Arrow's C++ (a Parquet reader released on this closing thread, or in a
# read-ahead thread) is std::terminate: "terminate called without an active exception",
# exit 134, after a script that left a loop or a DataLoader iterator open (CPython issue
# 87135). So before the interpreter finalizes (an atexit hook: the script's own threads have
# ended by then), the open iterations are closed (their threads joined) and this thread ends,
# each step waiting at most a few seconds.
_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()
_HOOKED = [0]
_STOP = object()
_EXIT_WAIT_S = 5.0


def _at_exit() -> None:
    def close_open() -> None:
        for it in list(_OPEN):
            with suppress(Exception):
                it.close()

    closing = threading.Thread(target=close_open, name="dload-exit", daemon=True)
    closing.start()
    closing.join(_EXIT_WAIT_S)
    pid, q, thread = _CLOSER
    if pid == os.getpid() and q is not None and thread is not None:
        q.put(_STOP)
        thread.join(_EXIT_WAIT_S)


def hand_off(closable: Any) -> bool:
    """Have the closing thread call ``closable.close()``; safe inside ``__del__``.

    Returns False (nothing done) where this process has no closing thread yet.
    """
    pid, q, _ = _CLOSER
    if pid != os.getpid() or q is None:
        return False
    q.put(closable)
    return True


def _run(q: queue.SimpleQueue[Any]) -> None:
    while True:
        closable = q.get()
        if closable is _STOP:
            return
        with suppress(Exception):
            closable.close()
        del closable  # its threads' files and holds are released; drop it before waiting
