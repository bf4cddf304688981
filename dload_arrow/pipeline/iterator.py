"""``PipelineIterator``: one running epoch of a pipeline, whose state is a cursor.

It builds the epoch's nodes, hands out items (or whole chunks), and saves its position as
``{"epoch", "cursor", "pipeline"}``: the cursor points into the planned order (never buffered
samples), and the fingerprint lets :meth:`Pipeline.load_state_dict` refuse a state saved by a
different pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import ConfigError, is_user_error
from dload_arrow.pipeline import closer
from dload_arrow.pipeline.check import sharing_budget, sources_at_once
from dload_arrow.pipeline.chunks import Chunk, chunk_items, chunk_len
from dload_arrow.pipeline.node import BEFORE, CURSOR, EPOCH, OFFSET, ItemCursor, State
from dload_arrow.pipeline.state_check import PastEndError
from dload_arrow.pipeline.state_sources import with_sources

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["FINGERPRINT", "PipelineIterator"]

FINGERPRINT = "pipeline"


class PipelineIterator(Iterator[Any]):
    """One epoch of a pipeline; its state is a cursor."""

    def __init__(self, pipe: Pipeline, epoch: int, cursor: State | None, chunks: bool) -> None:
        self.pipe = pipe
        self.epoch = epoch
        self.chunks = chunks
        self.generation = pipe._generation + 1  # the pipeline's once this iteration starts
        self._from = cursor
        self._make_nodes()
        try:
            self.cursor.reset(cursor)
        except (KeyError, IndexError, TypeError, ValueError) as e:
            if cursor is None:
                raise
            close = getattr(self.node, "close", None)
            if callable(close):
                close()
            if is_user_error(e):
                raise  # the user's function failed: its own error; the state stays loaded
            pipe._pending, pipe._next_epoch = None, epoch + 1  # refused: the next starts anew
            if isinstance(e, PastEndError):
                raise  # says all it needs to
            raise ConfigError(
                f"the loaded state's cursor does not fit this pipeline ({type(e).__name__}: "
                f"{e}); restore a state that this pipeline's state_dict() returned"
            ) from e
        self._items: list[Any] = []
        self._k = 0
        self._base: State | None = None
        self._resumed = cursor is not None
        self._finished = False
        self._closed = False
        closer.track(self)  # closed at exit if still open (closer.py)
        self._taken = 0  # items of the last chunk handed out whole (iter_chunks)
        self.replaced = False  # a newer iteration of the pipeline ended this one
        self._interrupted: State | None = None  # the cursor to go on from after a Ctrl-C
        self._resume: State | None = None  # the cursor before the chunk being read
        self._busy = False  # a thread is in _pull

    def __repr__(self) -> str:
        start = ", resumed from a state" if self._resumed else ""
        return f"<iteration of epoch {self.epoch}{start} over {self.pipe!r}>"

    def _make_nodes(self) -> None:
        with sharing_budget(sources_at_once(self.pipe)):  # the sources' windows split it
            self.node = self.pipe._build(self.epoch)
        if not self.chunks:
            self.node.prefer_items()
        self.cursor = ItemCursor(self.node)

    def __iter__(self) -> PipelineIterator:
        return self

    def __next__(self) -> Any:
        k = self._k  # the per-item path: as few attribute loads as possible
        items = self._items
        if k < len(items):
            self._k = k + 1
            return items[k]
        if self.chunks:
            return self._pull()
        while True:  # an empty chunk (a filter kept nothing) is skipped
            chunk = self._pull()
            try:
                self._items = items = chunk_items(chunk)
            except BaseException:  # (a Ctrl-C in the rows' conversion) none handed out
                self._interrupted = self._resume
                raise
            if items:
                self._k = 1
                return items[0]

    def _pull(self) -> Chunk:
        if self._busy:  # (no lock on the per-item path: it would cost every item)
            raise ConfigError(
                "this pipeline iterator is being read by another thread right now: one "
                "iterator serves one thread at a time (two at once would hand out items twice "
                "or lose them); give each thread its own pipeline (pipe.shard(i, n) splits "
                "one), or have one thread read and pass items on through a queue.Queue")
        self._busy = True
        try:
            return self._read()
        finally:
            self._busy = False

    def _read(self) -> Chunk:
        if self._finished:
            raise StopIteration
        if self.replaced:
            self._close_quietly()
            raise self._replaced_error()
        if self._interrupted is not None:  # read again from what was handed out, with
            old = self.cursor  # new nodes: the old may be anywhere (a generator the Ctrl-C
            self._make_nodes()  # went through is over, a thread half started)
            closer.hand_off(old)
            self.cursor.reset(self._interrupted)
            self._interrupted = None
        self._resume = self.cursor.get_state()  # everything before it handed out
        try:
            got = self.cursor.take_with_state(1 << 62)
        except Exception as e:  # closed under it by another thread's iter()
            if self.replaced:
                self._close_quietly()
                raise self._replaced_error() from e
            raise
        except BaseException:  # a Ctrl-C mid-read: going on reads again from before it
            self._interrupted = self._resume
            raise
        if got is None:
            self._finished = True
            self._base = None
            self.close()
            raise StopIteration
        self._base, chunk = got
        self._taken = chunk_len(chunk) if self.chunks else 0
        return chunk

    def replace(self) -> None:
        """End this iteration for a newer one of its pipeline (maybe from another thread)."""
        self.replaced = True
        self._items, self._k = [], 0  # its next item raises at once, not after its buffer
        self._close_quietly()

    def _close_quietly(self) -> None:
        # A thread still inside this iteration makes closing its generators fail ("generator
        # already executing"): that thread closes it at its next pull.
        with suppress(ValueError):
            self.close()

    def _replaced_error(self) -> ConfigError:
        return ConfigError(
            f"this iteration (epoch {self.epoch}) of the pipeline was ended by a newer iter() "
            "of the same pipeline: each for-loop over a pipeline starts its next epoch, one at "
            "a time, and state_dict() follows the newest. Iterate one pipeline per thread or "
            "loop; for a look at the data while training, use ds.head() or build a second "
            "pipeline"
        )

    def __del__(self) -> None:
        # Dropped unfinished (a `break` out of a loop over it): leave its position to the
        # pipeline, whose state_dict() follows the newest iteration, and have its threads,
        # files and cache holds stopped. Nothing here waits or calls into the nodes (a
        # source's state_dict() may be the user's own code, taking locks): closer.py.
        if getattr(self, "_closed", True) or self._finished or self.replaced:
            return  # closed already, or never made (its __init__ raised)
        with suppress(Exception):
            if self.pipe._fp is not None and self.pipe._generation == self.generation:
                base = self._base
                cur = self._interrupted or (self._from if base is None else {
                    BEFORE: base[BEFORE],
                    OFFSET: base[OFFSET] + min(self._k, len(self._items)) + self._taken})
                self.pipe._ended = {EPOCH: self.epoch, CURSOR: cur, FINGERPRINT: self.pipe._fp[:16]}
        with suppress(Exception):
            closer.hand_off(self.cursor)

    def state_dict(self) -> State:
        return with_sources(self._state(), self.pipe)

    def _state(self) -> State:
        fp = self.pipe._short_fp()
        if self._finished:
            return {EPOCH: self.epoch + 1, CURSOR: None, FINGERPRINT: fp}
        if self._base is not None and self._k < len(self._items):
            cur = {BEFORE: self._base[BEFORE], OFFSET: self._base[OFFSET] + self._k}
        elif self._interrupted is not None:
            cur = self._interrupted
        else:
            cur = self.cursor.get_state()
        return {EPOCH: self.epoch, CURSOR: cur, FINGERPRINT: fp}

    def close(self) -> None:
        """Stop this iteration's reads; the pipeline's state_dict() keeps its position."""
        if not (self._closed or self._finished or self.replaced) and \
                self.pipe._generation == self.generation:
            with suppress(Exception):
                self.pipe._ended = self.state_dict()
        self._closed = True
        self.cursor.close()
