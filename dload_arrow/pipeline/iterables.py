"""``from_iterable``: a pipeline over any Python source.

It lifts a sequence (indexed, so resuming jumps straight to the position), a map-style
object (``__len__`` and ``__getitem__`` of ``0 .. len - 1`` without ``__iter__``, e.g. a torch
map-style ``Dataset``: indexed the same way), a re-iterable object, or a factory ``f()`` /
``f(epoch)`` that returns a fresh iterator (a generator function, a generative model's
sampler). Resuming replays the factory's iterator up to the saved count, unless the iterator
is itself stateful (``state_dict`` / ``load_state_dict``), in which case its own state is saved
instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError, mark_user_error
from dload_arrow.pipeline.base import Pipeline
from dload_arrow.pipeline.chunks import Chunk
from dload_arrow.pipeline.integers import integer
from dload_arrow.pipeline.node import POSITION, Node, State
from dload_arrow.pipeline.state_check import check_position

__all__ = ["FromIterablePipe", "from_iterable"]

ITER_STATE = "iterable"
_SEQ_CHUNK = 256


def from_iterable(source: Any, *, chunk: int = 1, name: str | None = None,
                  finite: bool | None = None) -> Pipeline:
    """A pipeline over any iterable, or a factory of iterators.

    Args:
        source: a sequence (list, range, numpy array: resumes by index), a map-style object
            (``__len__`` and ``__getitem__`` of ints ``0 .. len - 1`` but no ``__iter__``,
            such as a torch map-style ``Dataset``: read ``source[0]``, ``source[1]``, ...,
            resuming by index too), a re-iterable object, or a callable returning a fresh
            iterator, called as ``source(epoch)`` if
            it takes an argument, else ``source()``. A one-shot iterator (a generator object)
            cannot start a second epoch or resume: pass the generator function instead.
        chunk: items per chunk handed downstream (raise it for many small items).
        name: a stable name used by ``fingerprint()`` for an object that is not a function.
            A set is taken sorted (its own order differs between processes).
        finite: whether each epoch ends. By default a sized source (a sequence, set, dict,
            or an object with ``__len__``) is finite and anything else may be endless;
            ``finite=True`` declares that a factory's iterators end (so ``repo.derive``
            takes it without ``.take(n)``).
    """
    if finite is not None and not isinstance(finite, bool):
        raise TypeError(f"from_iterable: finite must be True, False or None, got {finite!r}")
    n = integer(chunk)
    if n is None or n < 1:
        raise ConfigError(f"from_iterable: chunk must be an int >= 1, got {chunk!r}")
    if type(source).__name__ == "DataFrame" and hasattr(source, "columns"):  # pandas, polars
        raise ConfigError("from_iterable: a DataFrame iterates its column names (or columns), "
                          "not its rows; pass df.to_dict('records') (pandas) or df.to_dicts() "
                          "(polars) for rows as dicts, or commit it and read the dataset")
    if type(source).__name__ in ("Table", "RecordBatch") and hasattr(source, "schema"):
        raise ConfigError(f"from_iterable: a pyarrow {type(source).__name__} indexes its columns, "
                          "not its rows; pass table.to_pylist() for rows as dicts, or commit it "
                          "(repo.commit(name, table)) and read the dataset, which streams it")
    if isinstance(source, (set, frozenset)):  # hash order differs between processes: sorted
        try:
            source = sorted(source)
        except TypeError as e:
            raise ConfigError("from_iterable: a set's order differs from one process to the "
                              f"next, so its items are sorted, and these do not sort ({e}); "
                              "pass a list in the order you want") from e
    return FromIterablePipe(source, chunk=n, name=name, finite=finite)


class FromIterablePipe(Pipeline):
    op = "from_iterable"

    def __init__(self, source: Any, *, chunk: int = 1, name: str | None = None,
                 finite: bool | None = None) -> None:
        super().__init__()
        iterable = callable(source) or isinstance(source, Iterable) or _map_style(source)
        if isinstance(source, (str, bytes)) or not iterable:
            raise TypeError(
                f"from_iterable needs an iterable, a map-style object (__len__ and "
                f"__getitem__) or a factory of iterators, got {type(source).__name__}"
            )
        self.source, self.chunk, self.name = source, max(1, int(chunk)), name
        self._finite = finite
        self._used_once = False

    def _params(self) -> dict[str, Any]:
        src: Any = self.source
        if self.name is not None:
            src = self.name
        elif isinstance(src, range):
            src = {"range": [src.start, src.stop, src.step]}
        elif isinstance(src, (list, tuple)):
            src = {"items": repr(src)[:10_000], "len": len(src)}
        elif isinstance(src, np.ndarray):
            src = {"array": src.tobytes().hex()[:10_000], "shape": list(src.shape)}
        return {"source": src, "chunk": self.chunk}

    @property
    def finite(self) -> bool:
        if self._finite is not None:
            return self._finite
        return isinstance(self.source, Sized) and not isinstance(self.source, Iterator)

    @property
    def endless(self) -> bool:
        return self._finite is False  # declared; a factory's iterators may end or not

    def _length(self) -> int | None:
        sized = isinstance(self.source, Sized) and not isinstance(self.source, Iterator)
        return len(self.source) if sized and self.finite else None

    def _build(self, epoch: int) -> Node:
        src = self.source
        seq = isinstance(src, Sequence | np.ndarray) and not isinstance(src, (str, bytes))
        if seq or (not callable(src) and _map_style(src)):
            return _SequenceNode(src, max(self.chunk, _SEQ_CHUNK))
        return _IteratorNode(self, epoch)

    def _open(self, epoch: int) -> Iterator[Any]:
        src = self.source
        if callable(src) and not isinstance(src, Iterable):
            try:
                return iter(src(epoch) if _takes_arg(src) else src())
            except Exception as e:
                mark_user_error(e)
                raise  # (as it is: its own cause and context kept)
        if isinstance(src, Iterator):
            if self._used_once:
                raise RuntimeError(
                    "from_iterable got a one-shot iterator (e.g. a generator object), which "
                    "cannot be replayed for a second epoch or a restore; pass a function that "
                    "returns a fresh iterator instead (from_iterable(lambda: gen()))"
                )
            self._used_once = True
            return src
        return iter(src)


def _map_style(source: Any) -> bool:
    """A map-style object: sized and indexed (``0 .. len - 1``), not iterable (a torch map-style
    Dataset); from_iterable reads it by index, like a sequence."""
    t = type(source)
    return (hasattr(t, "__len__") and hasattr(t, "__getitem__") and not hasattr(t, "__iter__")
            and not isinstance(source, type))


def _takes_arg(fn: Callable[..., Any]) -> bool:
    try:
        params = [
            p for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):
        return False
    return len(params) >= 1


class _SequenceNode(Node):
    cheap_skip = True

    def __init__(self, seq: Any, chunk: int) -> None:
        self.seq, self.chunk, self.p = seq, chunk, 0

    def reset(self, state: State | None = None) -> None:
        self.p = 0 if state is None else int(state[POSITION])
        check_position(self.p, len(self.seq), "items")

    def get_state(self) -> State:
        return {POSITION: self.p}

    def next(self) -> Chunk:
        n = len(self.seq)
        if self.p >= n:
            raise StopIteration
        stop = min(n, self.p + self.chunk)
        out = [self.seq[i] for i in range(self.p, stop)]
        self.p = stop
        return out

    def skip(self, n: int) -> int:
        k = max(0, min(n, len(self.seq) - self.p))
        self.p += k
        return k


class _IteratorNode(Node):
    def __init__(self, pipe: FromIterablePipe, epoch: int) -> None:
        self.pipe, self.epoch = pipe, epoch
        self.it: Iterator[Any] | None = None
        self.count = 0

    def reset(self, state: State | None = None) -> None:
        self.it = self.pipe._open(self.epoch)
        self.count = 0 if state is None else int(state[POSITION])
        if state is None:
            return
        own = state.get(ITER_STATE)
        if own is not None and hasattr(self.it, "load_state_dict"):
            self.it.load_state_dict(own)
            return
        for i in range(self.count):  # replay: deterministic factories give the same items
            if _next(self.it) is _END:
                check_position(self.count, i, "items its iterable gave this time")

    def get_state(self) -> State:
        state: State = {POSITION: self.count}
        if self.it is not None and hasattr(self.it, "state_dict"):
            state[ITER_STATE] = self.it.state_dict()
        return state

    def next(self) -> Chunk:
        assert self.it is not None
        out = []
        for _ in range(self.pipe.chunk):
            x = _next(self.it)
            if x is _END:
                break
            out.append(x)
        if not out:
            raise StopIteration
        self.count += len(out)
        return out


_END = object()


def _next(it: Iterator[Any]) -> Any:
    """The user's iterator's next item, or ``_END``; its error is the user's even when the
    iterator is a C one (``map(int, lines)``) and the innermost Python frame is ours."""
    try:
        return next(it, _END)
    except Exception as e:
        mark_user_error(e)
        raise
