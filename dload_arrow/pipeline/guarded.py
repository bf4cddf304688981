"""An epoch's generator that says so when it is used after an error ended it.

A generator that an exception went through is over: its next ``next()`` raises StopIteration.
A training loop that catches the error (a Ctrl-C in a notebook, a failing ``map``) and goes on
with the same iterator would then end the epoch early without a word, skipping the rest of it
(a review finding: ``for b in ds.batches()`` after a Ctrl-C lost up to the whole epoch). The
torch dataset's and :class:`StatefulLoader`'s iterations, ``ds.batches()`` and
``ds.samples()`` are wrapped in :class:`Guarded`, which raises a ConfigError saying what to do
instead. (A pipeline's own iterator goes on after a Ctrl-C: pipeline/iterator.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dload_arrow.errors import ConfigError

__all__ = ["RESTART", "Guarded"]

_RESUME = "its state_dict() is exact: load it (ds.load_state_dict(state)) and iterate again"
RESTART = ("start a new one (the same order) and skip the {n} you have, e.g. "
           "itertools.islice({what}, {n}, None), or read through ds.pipeline(), whose "
           "iterator goes on after a Ctrl-C")


class Guarded(Iterator[Any]):
    """``gen``'s items; after an error went through it, every next() raises ConfigError."""

    def __init__(self, gen: Iterator[Any], what: str, advice: str = _RESUME) -> None:
        self._gen, self._what, self._advice = gen, what, advice
        self._ended: str | None = None
        self._n = 0

    def __iter__(self) -> Guarded:
        return self

    def __next__(self) -> Any:
        if self._ended is not None:
            raise ConfigError(
                f"this {self._what} iteration ended with {self._ended} after {self._n} "
                "item(s), and an iteration cannot go on after an error (ending it here would "
                f"skip the rest of the data); {self._advice.format(n=self._n, what=self._what)}")
        try:
            item = next(self._gen)
        except StopIteration:
            raise
        except BaseException as e:  # a KeyboardInterrupt too: the generator is over
            self._ended = type(e).__name__
            raise
        self._n += 1
        return item

    def close(self) -> None:
        close = getattr(self._gen, "close", None)
        if close is not None:
            close()
