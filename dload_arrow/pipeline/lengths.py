"""``Lengths``: what a pipeline knows of its epoch's length without reading any data.

Three answers, not two: a stream ends (``finite``: a dataset, a list, ``take(n)``), certainly
never ends (``endless``: ``random_stream``, ``repeat()``), or may do either (a factory of
iterators given to ``from_iterable``: neither). ``take(n)`` of an endless stream has ``n``
items; of one that may end, its length is unknown (a generator of 37 items under ``take(40)``
was counted 40, and torch ranks repeated items to fill the difference).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Lengths"]


class Lengths:
    """The length side of :class:`~dload_arrow.pipeline.base.Pipeline`."""

    _children: tuple[Any, ...]

    def _length(self) -> int | None:
        """Items per epoch when known without reading (None otherwise)."""
        return None

    def __bool__(self) -> bool:
        """Always True, as for a generator: ``pipe or default`` keeps ``pipe``, even one
        that is empty or whose length is unknown (``len`` would read data, or raise)."""
        return True

    def __len__(self) -> int:
        """Items per epoch, when the pipeline knows it without reading any data.

        Raises:
            TypeError: when only reading would tell (a filter, flat_map, a stop="first" mix).
        """
        n = self._length()
        if n is None and self.endless:
            raise TypeError(f"{self!r} never ends (repeat() without a count, random_stream): "
                            "it has no length; take(n) of it has n items")
        if n is None:
            ops = set(self._ops())
            hint = ("; map_batches(fn, rows_preserved=True) says fn keeps every row"
                    if "map_batches" in ops else "")
            raise TypeError(
                f"the length of {self!r} is only known by reading it (it has a filter, "
                "flat_map, a source that may end or not, a map_batches that may change the "
                "rows, or a mix that stops at the first exhausted input); an iterator factory "
                "that never ends can say so: from_iterable(fn, finite=False), and take(n) of "
                f"it has n items{hint}"
            )
        return n

    def _ops(self) -> list[str]:
        """The operators of this pipeline and every pipeline under it."""
        return [str(getattr(self, "op", "")), *(o for c in self._children for o in c._ops())]

    @property
    def finite(self) -> bool:
        """False when the stream may never end (repeat(), random_stream, cycling iterables)."""
        return all(c.finite for c in self._children)

    @property
    def endless(self) -> bool:
        """True when the stream certainly never ends (random_stream, repeat()); a stream that
        is not ``finite`` may still end (an iterator factory of ``from_iterable``)."""
        return any(c.endless for c in self._children)
