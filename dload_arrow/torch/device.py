"""``to_device``: move a loader's items onto an accelerator ahead of the training loop.

A background thread pulls items from the loader, pins their tensors in page-locked host
memory and starts non-blocking copies on a side CUDA stream; a bounded queue (``prefetch``
items) holds what is in flight. The loop's stream waits on each item's copy event before
using it, so compute overlaps the next transfers. Without CUDA (or for a CPU device) the same
thread and queue run with plain ``.to(device)`` moves and no pinning.

Checkpoints stay exact: the wrapper keeps the loader's state as it was when each item was
pulled and reports the state of the last item the loop received, not of what was prefetched.
The dataset it streams (through a :class:`StatefulLoader`, or a DataLoader without workers)
reports that same state from its own ``state_dict()``, and so does the loader, until another
iteration, ``set_epoch`` or ``load_state_dict``: saving ``loader.state_dict()`` inside
``for batch in to_device(loader, ...)`` is exact too.
"""

from __future__ import annotations

import operator
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
import torch.utils.data

from dload_arrow.args import kind
from dload_arrow.errors import ConfigError, shown
from dload_arrow.pipeline.state_sources import with_sources
from dload_arrow.torch.accelerators import resolve_device
from dload_arrow.torch.moves import (
    join_stopped,
    last_of,
    move_to,
    offer,
    pinned,
    remember,
    wait_for_copy,
    wait_for_last,
)

__all__ = ["DeviceLoader", "move_to", "to_device", "wait_for_last"]

_END = object()


class _Error:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class _Link:
    """What a dataset keeps of the wrapper driving it: the state as of the last item the loop
    received, and the wrapper's producer thread. Not the wrapper itself: that cycle (wrapper
    -> loader -> dataset -> wrapper) kept persistent DataLoader workers alive until the cyclic
    gc, and a weak reference died with an inline ``for b in to_device(...)`` loop, whose
    dataset then counted the items copied ahead."""

    def __init__(self) -> None:
        self.state: Any = None
        self.thread: threading.Thread | None = None
        self.stop: threading.Event | None = None  # tells that thread to stop

    def received_state(self) -> Any:
        return self.state

    def drives(self, thread: threading.Thread) -> bool:
        return thread is self.thread


class DeviceLoader:
    """Iterate ``loader`` with its items on ``device``; see :func:`to_device`."""

    def __init__(self, loader: Any, device: torch.device, prefetch: int) -> None:
        self.loader = loader
        self.device = device
        self.prefetch = prefetch
        self.cuda = device.type == "cuda" and torch.cuda.is_available()
        self._link = _Link()
        self._dataset = _stream_dataset(loader)
        # Workers delivering out of turn: what the loop received is no prefix of the stream.
        self._unordered = getattr(loader, "in_order", True) is False and \
            getattr(loader, "num_workers", 0) > 0

    @property
    def _state(self) -> Any:
        return self._link.state

    @_state.setter
    def _state(self, state: Any) -> None:
        self._link.state = state

    def __repr__(self) -> str:
        return (f"DeviceLoader({type(self.loader).__name__}, device={self.device}, "
                f"prefetch={self.prefetch})")

    def _live(self) -> Any:
        """The wrapped loader's state now (items in this wrapper's queue counted)."""
        if self._unordered:
            return None  # none is right (state_dict() says why); torchdata warns per call
        if self._dataset is not None:  # (with the versions it reads: QA review61c)
            return with_sources(self._dataset.live_state(), self._dataset.pipe)
        return self.loader.state_dict() if hasattr(self.loader, "state_dict") else None

    def received_state(self) -> Any:
        """The state as of the last item the loop received (None before any iteration)."""
        return self._link.received_state()

    def drives(self, thread: threading.Thread) -> bool:
        """Whether ``thread`` is this wrapper's producer (it iterates the wrapped loader)."""
        return self._link.drives(thread)

    def __len__(self) -> int:
        return len(self.loader)

    def _transfer(self, stream: Any) -> Callable[[Any], tuple[Any, Any]]:
        if not self.cuda:
            return lambda item: (move_to(item, lambda t: t.to(self.device)), None)

        def cuda_copy(item: Any) -> tuple[Any, Any]:
            def one(t: torch.Tensor) -> torch.Tensor:
                # a tensor on a device already (a collate that made it there) is no host
                # memory to pin: torch refuses pin_memory() on it
                host = t if t.device.type != "cpu" or t.is_pinned() else pinned(t)
                return host.to(self.device, non_blocking=True)

            with torch.cuda.stream(stream):
                moved = move_to(item, one)
                event = torch.cuda.Event()
                event.record(stream)
            return moved, event

        return cuda_copy

    def _produce(self, q: queue.Queue[Any], stop: threading.Event) -> None:
        stream = torch.cuda.Stream(self.device) if self.cuda else None
        transfer = self._transfer(stream)
        try:
            for item in self.loader:
                moved, event = transfer(item)
                if not offer(q, stop, (moved, event, self._live())):
                    return
            offer(q, stop, (_END, None, self._live()))
        except BaseException as e:  # hand the failure to the loop that reads the queue
            offer(q, stop, _Error(e))  # (unless that loop left: then nobody waits for it)

    def __iter__(self) -> Iterator[Any]:
        self._settle(end=True)
        q: queue.Queue[Any] = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        try:
            self._state = self._live()
        except ConfigError:  # a plain DataLoader's workers ran before: the first item tells
            self._state = None
        thread = threading.Thread(target=self._produce, args=(q, stop), daemon=True)
        self._link.thread, self._link.stop = thread, stop
        remember(self.loader, thread, stop)  # what another wrapper of it must wait for
        if self._dataset is not None:
            self._dataset._device = self._link  # its state_dict() now reports what we got
        thread.start()
        try:
            while True:
                if stop.is_set():  # a newer iteration, or a load_state_dict, ended this one
                    raise ConfigError(
                        "to_device: this iteration was ended by a newer one over the same "
                        "loader (iter() or load_state_dict() since): the loader runs one "
                        "iteration at a time; go on with the newest")
                try:
                    got = q.get(timeout=0.1)
                except queue.Empty:
                    continue
                if isinstance(got, _Error):
                    raise got.exc
                moved, event, state = got
                if moved is _END:
                    self._state = state  # the loader's state after its last item
                    return
                if event is not None:
                    wait_for_copy(moved, event, self.device)
                self._state = state
                yield moved
        finally:
            stop.set()  # the thread stops at its next item; the next use waits for it
            thread.join(timeout=0.5)

    def _settle(self, end: bool = False) -> None:
        """Wait until the loader's last iteration, once told to stop, has left it (see
        :func:`wait_for_last`). ``end``: end one still running first (a peek kept in a
        variable; a new iteration, load_state_dict); set_epoch leaves a running one alone."""
        # (another wrapper's iteration of the same loader counts too)
        thread, stop = last_of(self.loader, (self._link.thread, self._link.stop))
        if end and stop is not None and thread is not threading.current_thread():
            stop.set()
        join_stopped(thread, stop, self.loader)

    def set_epoch(self, epoch: int) -> None:
        """The wrapped loader's ``set_epoch``: the next ``iter()`` is epoch ``epoch``."""
        self._settle()
        self.loader.set_epoch(epoch)

    def state_dict(self) -> Any:
        """The loader's state as of the last item this loop received (not the prefetched).

        A loader that keeps no state (a plain DataLoader with workers) is a ConfigError that
        says which loader to use, never a silent None."""
        if self._unordered:
            raise ConfigError(
                f"to_device: the wrapped {type(self.loader).__name__} has in_order=False with "
                f"{self.loader.num_workers} workers, which deliver items out of turn, so no "
                "state can say which items the loop received (a resume would repeat some and "
                "skip others); keep in_order=True (the default) to checkpoint, as "
                "dload_arrow.torch.StatefulLoader requires"
            )
        state = self._live() if self._state is None else self._state
        if state is not None:
            return state
        own = getattr(getattr(self.loader, "dataset", None), "state_dict", None)
        refused = ConfigError(
            f"to_device: the wrapped {type(self.loader).__name__} keeps no state to save; "
            "wrap a dload_arrow.torch.StatefulLoader or torchdata's StatefulDataLoader to "
            "checkpoint mid-epoch"
        )
        if not callable(own):
            raise refused
        try:
            return own()  # the dataset's own answer: exact, or the reason it is not
        except ConfigError as e:
            if not getattr(self.loader, "num_workers", 0):
                raise
            raise refused from e  # its workers read ahead: this wrapper is no way out

    def load_state_dict(self, state: Any, strict: bool = True) -> None:
        """Resume the wrapped loader from ``state`` (what :meth:`state_dict` returned);
        ``strict=False`` as the dataset's (a loader without that argument is given none).
        An iteration still running ends: its next read raises ConfigError."""
        if not callable(getattr(self.loader, "load_state_dict", None)):
            raise ConfigError(
                f"to_device: the wrapped {type(self.loader).__name__} has no load_state_dict "
                "to resume from; wrap a dload_arrow.torch.StatefulLoader or torchdata's "
                "StatefulDataLoader, or load the state into the dataset before wrapping")
        self._settle(end=True)
        self._state = None
        if strict:
            self.loader.load_state_dict(state)
        else:
            self.loader.load_state_dict(state, strict=False)


def to_device(loader: Any, device: str | torch.device, prefetch: int = 2) -> DeviceLoader:
    """Wrap ``loader`` so its items arrive on ``device``, copied ahead of use.

    Args:
        loader: any iterable of tensors / dicts / lists of tensors (a DataLoader,
            :class:`StatefulLoader`, StatefulDataLoader).
        device: e.g. ``"cuda"``, ``"cuda:1"``, ``"cpu"``. A CUDA device without CUDA falls
            back to the CPU, with a warning; any other device missing here (``"mps"`` on
            Linux, ``"cuda:3"`` on a 2-GPU machine) is a ConfigError naming those available.
        prefetch: items in flight (the queue's bound), >= 1.

    Returns:
        An iterable with ``state_dict`` / ``load_state_dict`` / ``set_epoch`` passed through.
    """
    if isinstance(loader, str | bytes | Mapping) or not isinstance(loader, Iterable):
        raise TypeError(f"to_device(loader={shown(loader)}): loader must be an iterable of "
                        f"batches (a DataLoader, StatefulLoader, ...), got {kind(loader)}")
    whole = not isinstance(prefetch, bool) and hasattr(type(prefetch), "__index__")
    if not whole or operator.index(prefetch) < 1:  # a numpy int is one
        raise ConfigError(f"prefetch={prefetch!r}: need an int >= 1 (items in flight)")
    prefetch = operator.index(prefetch)
    if isinstance(loader, DeviceLoader):  # its state would count the inner queue's items too
        raise ConfigError(
            f"to_device({loader!r}): the loader is a to_device wrapper already; wrap the "
            f"loader inside it once, to_device(loader.loader, {str(device)!r}) (a larger "
            "prefetch= keeps more items in flight)")
    dev = resolve_device(device)
    return DeviceLoader(loader, dev, prefetch)


def _stream_dataset(loader: Any) -> Any:
    """The :class:`StreamDataset` whose state ``loader`` reports, when this wrapper can keep
    it exact: the dataset itself, a StatefulLoader's, or a worker-less DataLoader's."""
    from dload_arrow.torch.dataset import StreamDataset
    from dload_arrow.torch.loader import StatefulLoader

    if isinstance(loader, StreamDataset):
        return loader
    if isinstance(loader, StatefulLoader):
        return loader.dataset
    if type(loader) is torch.utils.data.DataLoader and loader.num_workers == 0 and \
            isinstance(loader.dataset, StreamDataset):
        return loader.dataset
    return None
