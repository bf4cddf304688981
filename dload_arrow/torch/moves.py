"""The pieces :func:`~dload_arrow.torch.device.to_device` moves items with: a tensor
function applied through nested items, pinning that degrades to plain copies, the loop
stream's wait for a copy, a bounded hand-off that gives up once the loop has left, and each
wrapped loader's last iteration thread, which any next use of the loader waits for."""

from __future__ import annotations

import contextlib
import queue
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import torch

__all__ = ["join_stopped", "last_of", "move_to", "offer", "pinned", "remember", "wait_for_copy",
           "wait_for_last"]


def move_to(item: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """Apply ``fn`` to every tensor in a nested dict / list / tuple; other values stay."""
    if isinstance(item, torch.Tensor):
        return fn(item)
    if isinstance(item, Mapping):
        return {k: move_to(v, fn) for k, v in item.items()}
    if isinstance(item, tuple):
        return tuple(move_to(v, fn) for v in item)
    if isinstance(item, list):
        return [move_to(v, fn) for v in item]
    return item


def wait_for_copy(moved: Any, event: Any, device: torch.device) -> None:
    """Make the loop's stream wait for the copy, and tell the allocator who uses the memory."""
    current = torch.cuda.current_stream(device)
    current.wait_event(event)

    def mark(t: torch.Tensor) -> torch.Tensor:
        t.record_stream(current)
        return t

    move_to(moved, mark)


def pinned(t: torch.Tensor) -> torch.Tensor:
    """``t`` in page-locked memory, or ``t`` itself where pinning fails (a low memlock limit
    in a container, pinned memory exhausted): the copy is then blocking, not wrong."""
    try:
        return t.pin_memory()
    except RuntimeError as e:
        warnings.warn(f"to_device: cannot pin a {tuple(t.shape)} {t.dtype} tensor in "
                      f"page-locked memory ({e}); copying it without pinning (slower)",
                      stacklevel=2)
        return t


def offer(q: queue.Queue[Any], stop: threading.Event, value: Any) -> bool:
    """Put ``value`` once there is room, unless the reading loop left (``stop``): False."""
    while not stop.is_set():
        try:
            q.put(value, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


# Each wrapped loader's latest to_device iteration thread and its stop event, whichever wrapper
# ran it: a new to_device(loader) each epoch, or the loader's own loop, must wait for it.
_LAST: weakref.WeakKeyDictionary[Any, tuple[threading.Thread, threading.Event]] = \
    weakref.WeakKeyDictionary()


def remember(loader: Any, thread: threading.Thread, stop: threading.Event) -> None:
    """Record ``loader``'s newest iteration (a loader without weak references: not kept)."""
    with contextlib.suppress(TypeError):
        _LAST[loader] = (thread, stop)


def last_of(loader: Any, default: tuple[Any, Any]) -> tuple[Any, Any]:
    """``loader``'s newest iteration ``(thread, stop)``, else ``default``."""
    try:
        return _LAST.get(loader, default)
    except TypeError:
        return default


def wait_for_last(loader: Any) -> None:
    """Wait until a to_device iteration of ``loader`` that was told to stop (a loop left
    early) has left it: the thread stops at the loader's next item (a worker may be
    mid-batch), and a DataLoader with persistent workers started again meanwhile would reset
    the iterator that thread is still shutting down (torch fails, or aborts the process).
    Whichever wrapper ran it, and the loader's own next loop too (loader.py)."""
    join_stopped(*last_of(loader, (None, None)), loader)


def join_stopped(thread: threading.Thread | None, stop: threading.Event | None,
                 loader: Any) -> None:
    """Wait for ``thread`` if ``stop`` was set (warning past 5 s), unless it is this one."""
    if thread is None or stop is None or not stop.is_set() or \
            thread is threading.current_thread():
        return
    thread.join(timeout=5)
    if thread.is_alive():
        warnings.warn(f"to_device: waiting for the previous iteration of the wrapped "
                      f"{type(loader).__name__} to stop (its loader is in the middle of an "
                      "item)", stacklevel=4)
        thread.join()
