"""The ``dload`` console script, before anything heavy is imported.

Ctrl-C is ``dload: interrupted`` and exit code 130 from the moment this module is imported:
also while the commands' modules load (pyarrow, click; about 0.1-0.5 s, when a Ctrl-C used to
print a traceback), which :func:`dload_arrow.cli.main.main` cannot cover since it is one of
them. Only a Ctrl-C in the first 20-50 ms, while Python starts and imports this module, shows
Python's own ``KeyboardInterrupt``: no program's code runs yet. Once a command has
finished, a late Ctrl-C (during the interpreter's shutdown) no longer replaces its exit code.

:func:`console` (the script itself) flushes the output and ends the process with ``os._exit``,
skipping the interpreter's shutdown. That shutdown gave nothing to a finished command and once
aborted one that had succeeded: a ``dload diff --json`` on S3 exited with SIGABRT
("terminate called without an active exception") after printing its answer, as a native
library's thread, still inside Arrow or DuckDB, was torn down with the interpreter. Every file
the commands write is closed (and every lock released) before their exit code is known.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

__all__ = ["Terminated", "console", "main", "on_term"]


class Terminated(KeyboardInterrupt):
    """SIGTERM (`timeout`, a scheduler, `kill`): the command stops as on Ctrl-C, its cleanup
    run, ``dload: terminated`` and exit code 143 (QA etl63: it died silently, leaving temp
    files under the root's shards/)."""


def on_term(signum: int, frame: object) -> None:
    raise Terminated()


def main() -> int:
    """Run the CLI and return its exit code (see :mod:`dload_arrow.cli.main`)."""
    signal.signal(signal.SIGTERM, on_term)
    try:
        from dload_arrow.cli.main import main as run

        code = run()
        for sig in (signal.SIGINT, signal.SIGTERM):  # done: its exit code stands
            signal.signal(sig, signal.SIG_IGN)
    except Terminated:
        print("dload: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("dload: interrupted", file=sys.stderr)
        return 130
    return code


def console() -> None:
    """The ``dload`` script: :func:`main`, then its output flushed and the process ended with
    the exit code, without the interpreter's shutdown (see the module's docstring)."""
    code = main()
    if "dload_arrow.catalog.catalog" in sys.modules:  # DuckDB removes its spill files on close
        with contextlib.suppress(Exception):
            sys.modules["dload_arrow.catalog.catalog"].close_all()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a reader that left:
            stream.flush()  # nothing to tell; None: started with the stream closed
    os._exit(code)
