"""The pieces :func:`~dload_arrow.torch.device.to_device` moves items with: a tensor
function applied through nested items, pinning that degrades to plain copies, the loop
stream's wait for a copy, and a bounded hand-off that gives up once the loop has left."""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch

__all__ = ["move_to", "offer", "pinned", "wait_for_copy"]


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
