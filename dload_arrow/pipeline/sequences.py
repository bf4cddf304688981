"""Operators for token sequences, mixed into :class:`~dload_arrow.pipeline.base.Pipeline`:
``pack`` (:mod:`dload_arrow.pipeline.pack`) and ``bucket`` (:mod:`dload_arrow.pipeline.bucket`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["SequenceOps"]


class SequenceOps:
    """``pipe.pack(...)``, ``pipe.bucket(...)``."""

    def pack(self, length: int, column: str = "tokens", *, separator: int | None = None,
             drop_remainder: bool = False) -> Pipeline:
        """Rows of exactly ``length`` tokens: the ``column`` lists of the items end to end
        (``separator``, an end-of-text id, after each), cut every ``length`` tokens. Each row
        is ``{column: array, f"{column}_segment": int32 array}``, the segment numbering the
        documents within the row (0, 1, ...); the last, shorter row of an epoch is kept
        unless ``drop_remainder``. Resumable mid-row; the state is a cursor, never tokens.

        Example:
            >>> ds.shuffle(seed=0).pack(2048, "input_ids", separator=eos,
            ...                         drop_remainder=True).batch(8)
            ... # doctest: +SKIP
        """
        from dload_arrow.pipeline.pack import PackPipe

        me: Any = self
        return PackPipe(me, length, column, separator, drop_remainder)

    def bucket(self, size: int, column: str = "tokens", *, window: int | None = None,
               seed: int = 0) -> Pipeline:
        """Items reordered so that each run of ``size`` has ``column`` sequences of similar
        length: follow it with ``batch(size, collate=pad_collate())``, which then pads
        little. Windows of ``window`` items (default 64 batches' worth; a multiple of
        ``size``) are sorted by length and cut into groups of ``size``, which come out in an
        order drawn from ``(seed, epoch, window)``. Resumable (the state is the input cursor
        at the window's start), every item once.

        Example:
            >>> ds.shuffle(seed=0).bucket(32).batch(32, collate=pad_collate())
            ... # doctest: +SKIP
        """
        from dload_arrow.pipeline.bucket import BucketPipe

        me: Any = self
        return BucketPipe(me, size, column, window, seed)

