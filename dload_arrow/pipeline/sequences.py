"""Operators for token sequences, mixed into :class:`~dload_arrow.pipeline.base.Pipeline`:
``pack`` (see :mod:`dload_arrow.pipeline.pack`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline

__all__ = ["SequenceOps"]


class SequenceOps:
    """``pipe.pack(...)``."""

    def pack(self, length: int, column: str = "tokens", *, separator: int | None = None,
             drop_remainder: bool = False) -> Pipeline:
        """Rows of exactly ``length`` tokens: the ``column`` lists of the items end to end
        (``separator``, an end-of-text id, after each), cut every ``length`` tokens. Each row
        is ``{column: array, f"{column}_segment": int32 array}``, the segment numbering the
        documents within the row (0, 1, ...); the last, shorter row of an epoch is kept
        unless ``drop_remainder``. Resumable mid-row: the carried tokens are in the state.

        Example:
            >>> ds.shuffle(seed=0).pack(2048, "input_ids", separator=eos).batch(8)
            ... # doctest: +SKIP
        """
        from dload_arrow.pipeline.pack import PackPipe

        me: Any = self
        return PackPipe(me, length, column, separator, drop_remainder)
