"""DataLoader workers forked from a training process, and the garbage collector.

A forked worker inherits every object of the trainer's process, including garbage and, when
the fork lands while another thread of the parent is mid-update, objects in a half-changed
state. The worker's first collections walk them: the suite saw workers die with a
segmentation fault "Garbage-collecting" (4 Dec, once under our own StatefulLoader, once under
torchdata's StatefulDataLoader, inside a decoding thread of the worker). Two defences:

- :func:`start_workers` (the parent, for :class:`~dload_arrow.torch.loader.StatefulLoader`):
  freeze the collector while the DataLoader forks, then unfreeze: the children start with
  every parent object in the permanent generation. No collection first: a full one walks
  the whole heap each epoch, and in a process that was itself forked from a threaded one (a
  rank started with the fork method) it is what met the half-changed objects (the suite, 4
  Dec: "Garbage-collecting" in ``start_workers``); garbage frozen in a worker is only memory
  shared with the parent, and the parent collects its own after the unfreeze. Starts are
  serialised (two loaders starting in two threads would unfreeze each other's fork), and a
  program that froze objects itself keeps its freeze untouched: it manages the collector
  around forks already.
- :func:`freeze_inherited` (the worker, for any DataLoader that runs our dataset): the first
  time a forked worker iterates, it freezes what it inherited, before our threads allocate.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from typing import Any

__all__ = ["freeze_inherited", "start_workers"]

_starting = threading.Lock()
_frozen_in: set[int] = set()  # worker processes (pids) that froze their inheritance


def start_workers(loader: Any) -> Any:
    """``iter(loader)`` with the collector frozen while it forks its workers (see above).

    Persistent workers already running fork nothing (no freeze then), nor do spawned ones."""
    ctx = loader.multiprocessing_context
    method = (ctx if ctx is not None else multiprocessing.get_context()).get_start_method()
    reused = getattr(loader, "persistent_workers", False) and \
        getattr(loader, "_iterator", None) is not None
    if method != "fork" or reused:
        return iter(loader)
    with _starting:
        if gc.get_freeze_count():  # the program's own freeze: left as it is
            return iter(loader)
        gc.freeze()
        try:
            return iter(loader)
        finally:
            gc.unfreeze()


def freeze_inherited(worker_info: Any) -> None:
    """In a DataLoader worker (``worker_info`` not None), once: move the objects inherited
    from the parent out of the collector's reach (the parent's own stay untouched)."""
    pid = os.getpid()
    if worker_info is None or pid in _frozen_in or multiprocessing.parent_process() is None:
        return
    _frozen_in.add(pid)
    gc.freeze()
