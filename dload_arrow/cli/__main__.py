"""``python -m dload_arrow.cli``: the ``dload`` command, exactly as the console script runs it
(Ctrl-C handling, and the end without the interpreter's shutdown, where a native thread still
inside Arrow aborted a finished command now and then with "terminate called without an active
exception", exit 134: QA review59h)."""

from dload_arrow.cli.entry import console

console()
