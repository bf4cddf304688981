"""Test diagnostics: a DataLoader worker killed by a fatal signal prints its Python stacks.

torch's worker installs its own SIGSEGV handler, which only says "Unexpected segmentation
fault encountered in worker". Re-enabling faulthandler after it chains the two, so a crash
seen once in CI shows which line of which thread it came from.
"""

from __future__ import annotations

import faulthandler
import sys
from typing import Any


def install() -> None:
    """Wrap torch's worker signal set-up (a no-op where torch is not installed)."""
    try:
        from torch.utils.data._utils import signal_handling
    except ImportError:
        return
    original = signal_handling._set_worker_signal_handlers
    if getattr(original, "_dload_stacks", False):
        return

    def with_stacks(*args: Any, **kwargs: Any) -> None:
        faulthandler.disable()  # enabled in the parent (pytest): enable() alone does nothing
        original(*args, **kwargs)
        faulthandler.enable(file=sys.__stderr__, all_threads=True)  # then torch's handler

    with_stacks._dload_stacks = True  # type: ignore[attr-defined]
    signal_handling._set_worker_signal_handlers = with_stacks
