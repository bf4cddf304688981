"""The node contract every pipeline operator implements, and the item cursor they share.

A node is the running form of a pipeline stage. It has three methods:

- ``reset(state)``: start over (``None``: from the beginning of the epoch it was built for)
  or continue exactly where ``state`` was taken;
- ``next()``: the next chunk of items (see :mod:`dload_arrow.pipeline.chunks`), or
  ``StopIteration`` at the end;
- ``get_state()``: a small JSON-able dict, a cursor into the planned order. State keys are the
  module constants below; a child's state nests under its parent's (:data:`CHILD`,
  :data:`CHILDREN`). A state never holds samples.

Nodes whose position can advance without reading (a dataset source, ``map``, ``batch``)
override :meth:`Node.skip`; the others inherit a skip that reads and drops.
"""

from __future__ import annotations

from typing import Any

from dload_arrow.args import check_count
from dload_arrow.errors import ConfigError
from dload_arrow.pipeline.chunks import Chunk, chunk_len, chunk_slice

__all__ = [
    "BEFORE",
    "CHILD",
    "CHILDREN",
    "CURSOR",
    "DONE",
    "EPOCH",
    "HeldError",
    "OFFSET",
    "POSITION",
    "ItemCursor",
    "Node",
    "State",
    "check_count",
    "stop_error",
]

State = dict[str, Any]

# State keys (STYLE rule 3: named constants, children nested under their parent).
CHILD = "child"
CHILDREN = "children"
CURSOR = "cursor"
BEFORE = "before"
OFFSET = "offset"
POSITION = "position"
DONE = "done"
EPOCH = "epoch"


class HeldError:
    """An error a node met after gathering some items: those go out first and the error comes
    from the next call, so the items before a failing one are not lost."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def raise_pending(self) -> None:
        """Raise the held error, once: the first thing a node's ``next()`` does."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def hold(self, error: BaseException, gathered: int) -> None:
        """Hold ``error`` for the next call when ``gathered`` items go out now; else raise it."""
        if not gathered:
            raise error
        self.error = error


def noted(error: Exception, fn: Any, item: Any) -> Exception:
    """``error``, raised by the user's ``fn`` on ``item``, with a note naming both (the type
    kept, so ``except`` clauses still match): which function, and which sample by its key."""
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    key = item.get("__key__") if isinstance(item, dict) else None
    on = f", on the sample with __key__ {key!r}" if isinstance(key, str) else ""
    note = f"(dload_arrow: raised by the pipeline's function {name}{on})"
    if not any(str(n).startswith("(dload_arrow: raised by") for n in getattr(
            error, "__notes__", ())):  # (one exception object raised again: noted once)
        error.add_note(note)
    return error


def stop_error(what: str) -> RuntimeError:
    """The error for a user's function that raised StopIteration (raise it ``from`` that): a
    node's StopIteration means "no more items", so letting it through would end the stream
    silently, losing the rest. Generators do the same since PEP 479."""
    return RuntimeError(f"{what} raised StopIteration, which would silently end the stream; "
                        "raise another exception (or return a value) in that function")


class Node:
    """Base class: the reset / next / get_state contract."""

    #: True when :meth:`skip` advances without producing (and so without I/O).
    cheap_skip = False

    def reset(self, state: State | None = None) -> None:
        raise NotImplementedError

    def next(self) -> Chunk:
        raise NotImplementedError

    def get_state(self) -> State:
        raise NotImplementedError

    def skip(self, n: int) -> int:
        """Advance by up to ``n`` items; return how many were skipped (fewer only at the end).

        Only nodes with ``cheap_skip = True`` implement it; :class:`ItemCursor` reads and
        drops items of the others.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release background resources (prefetch threads). Idempotent."""

    def prefer_items(self) -> None:
        """Told by the consumer: it turns every chunk of this node into Python items.

        A source may then hand out lists of items instead of Arrow batches (cheaper when it
        would otherwise gather rows in Arrow only to have them converted). Nodes whose items
        pass through unchanged tell their children; the default ignores the hint.
        """

    def start_ahead(self) -> None:
        """Told by a parent that reads several inputs (``mix``, ``zip``): begin the work behind
        the next chunk now, in the background, so that the inputs' first reads overlap instead
        of running one after the other. Pass-through nodes tell their child; the default
        ignores the hint.
        """


class ItemCursor:
    """Item-level access over a child node, with a state that is a cursor.

    The state is the child's state taken just before the current chunk, plus how many items
    of that chunk were consumed: restoring resets the child, re-reads that chunk and drops the
    consumed items. Nodes that regroup items (batch, mix, shard, ...) read through this.

    ``count`` is how many items were taken or skipped since the last reset, kept exact when
    the child raises in the middle of a :meth:`skip` (a user's function failing at an item):
    a node that counts positions (shard, skip) reads its progress there, so an error loses
    no position.
    """

    def __init__(self, child: Node) -> None:
        self.child = child
        self._chunk: Chunk | None = None
        self._offset = 0
        self._before: State | None = None
        self._done = False
        self.count = 0

    def reset(self, state: State | None = None) -> None:
        self._chunk, self._offset, self._done, self.count = None, 0, False, 0
        if state is None:
            self.child.reset(None)
            self._before = None
            return
        self.child.reset(state[BEFORE])
        offset = int(state[OFFSET])
        if offset:
            self._fill()
            n = 0 if self._chunk is None else chunk_len(self._chunk)
            self._offset = min(offset, n)
            # The chunk may end sooner than where the state was saved (a shuffled chunk is cut
            # by its rows' bytes, and views=True pipelines are not): the offset counts items
            # from the state before, so the rest is skipped from the chunks that follow.
            if offset > n and (self._chunk is None or self.skip(offset - n) < offset - n):
                raise ConfigError(
                    f"cannot restore: fewer than {offset} items follow this state's position; "
                    "the pipeline or its sources differ from the ones that saved the state"
                )
            self.count = 0

    def get_state(self) -> State:
        if self._chunk is not None and self._offset < chunk_len(self._chunk):
            return {BEFORE: self._before, OFFSET: self._offset}
        return {BEFORE: self.child.get_state(), OFFSET: 0}

    def _fill(self) -> bool:
        """Make sure a chunk with unread items is loaded; False at the end of the child."""
        while self._chunk is None or self._offset >= chunk_len(self._chunk):
            if self._done:
                return False
            self._before = self.child.get_state()
            try:
                self._chunk = self.child.next()
            except StopIteration:
                self._chunk, self._done = None, True
                return False
            self._offset = 0
        return True

    def take(self, n: int) -> Chunk | None:
        """Up to ``n`` items from the current chunk (at least one), or None at the end."""
        if not self._fill():
            return None
        assert self._chunk is not None
        start = self._offset
        stop = min(chunk_len(self._chunk), start + n)
        self._offset = stop
        self.count += stop - start
        return chunk_slice(self._chunk, start, stop)

    def untake(self, n: int) -> None:
        """Give back the last ``n`` items taken, all from the current chunk (an error in the
        function that was to use them: they are read again next)."""
        assert 0 <= n <= self._offset
        self._offset -= n
        self.count -= n

    def take_with_state(self, n: int) -> tuple[State, Chunk] | None:
        """Like :meth:`take`, also returning the state just before the items taken."""
        if not self._fill():
            return None
        state = {BEFORE: self._before, OFFSET: self._offset}
        out = self.take(n)
        assert out is not None
        return state, out

    def peek_len(self) -> int:
        """Unread items in the current chunk (loading the next one if needed; 0 at the end)."""
        if not self._fill():
            return 0
        assert self._chunk is not None
        return chunk_len(self._chunk) - self._offset

    def buffered(self) -> int:
        """Unread items in the current chunk, without reading the next one."""
        return 0 if self._chunk is None else chunk_len(self._chunk) - self._offset

    def take_chunk(self) -> Chunk | None:
        """The rest of the current chunk, or None at the end."""
        return self.take(1 << 62)

    def skip(self, n: int) -> int:
        """Advance ``n`` items (fewer only at the end); cheap when the child can skip."""
        done = 0
        try:  # (count stays exact when the child raises while read and dropped)
            if self._chunk is not None:
                k = min(n, chunk_len(self._chunk) - self._offset)
                self._offset += k
                done += k
            if done < n and self.child.cheap_skip and not self._done:
                self._chunk = None
                done += self.child.skip(n - done)
            while done < n and self._fill():
                assert self._chunk is not None
                k = min(n - done, chunk_len(self._chunk) - self._offset)
                self._offset += k
                done += k
        finally:
            self.count += done
        return done

    def close(self) -> None:
        self.child.close()
