"""The ``dload`` console script, before anything heavy is imported.

Ctrl-C is ``dload: interrupted`` and exit code 130 at any moment: also while the commands'
modules load (pyarrow, click; about 0.1-0.5 s, when a Ctrl-C used to print a traceback), which
:func:`dload_arrow.cli.main.main` cannot cover since it is one of them. Once a command has
finished, a late Ctrl-C (during the interpreter's shutdown) no longer replaces its exit code.
"""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]


def main() -> int:
    """Run the CLI and return its exit code (see :mod:`dload_arrow.cli.main`)."""
    try:
        from dload_arrow.cli.main import main as run

        code = run()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: its exit code stands
    except KeyboardInterrupt:
        print("dload: interrupted", file=sys.stderr)
        return 130
    return code
