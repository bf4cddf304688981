"""The pipeline shortcuts of a :class:`~dload_arrow.repository.dataset.Dataset`:
``ds.shuffle(...)`` for ``ds.pipeline().shuffle(...)``, and so on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from dload_arrow.pipeline.base import Pipeline
    from dload_arrow.pipeline.dataset import DatasetPipe

__all__ = ["PipelineShortcuts"]


class PipelineShortcuts:
    """Pipelines that start from this dataset version (or view)."""

    def pipeline(self, columns: Sequence[str] | None = None, *, views: bool = False
                 ) -> DatasetPipe:
        """This version (or view) as a lazy, resumable pipeline, rows in storage order.

        ``views=True``: binary and string columns come out as ``binary_view`` and
        ``string_view``, so a shuffle gathers 16-byte views instead of copying each value
        (the same values; some Arrow kernels lack view types: docs/TUTORIAL.md, "Views").
        """
        from dload_arrow.pipeline.dataset import DatasetPipe

        return DatasetPipe(self, columns, views=views)

    def shuffle(
        self, buffer: int | str | None = None, seed: int = 0, *, full: bool = False,
        views: bool = False,
    ) -> DatasetPipe:
        """A shuffled pipeline: windowed (``buffer`` rows or bytes like ``"256MB"``; shard
        and row-group order permuted, rows permuted within windows) or ``full=True`` (uniform;
        the whole view must fit the cache budget). ``views``: as in :meth:`pipeline`."""
        # (a fresh dataset pipeline's own shuffle: a DatasetPipe, order_array() and all)
        return cast("DatasetPipe", self.pipeline(views=views).shuffle(buffer, seed, full=full))

    def map(self, fn: Callable[[Any], Any]) -> Pipeline:
        """``self.pipeline().map(fn)``: ``fn`` gets each row as a dict."""
        return self.pipeline().map(fn)

    def map_batches(self, fn: Callable[[Any], Any], *, rows_preserved: bool = False) -> Pipeline:
        """``self.pipeline().map_batches(fn)``: ``fn`` gets pyarrow RecordBatches."""
        return self.pipeline().map_batches(fn, rows_preserved=rows_preserved)

    def filter(self, predicate: Any) -> Pipeline:
        """``self.pipeline().filter(predicate)`` (a function of a row dict, or an Expression)."""
        return self.pipeline().filter(predicate)

    def batch(self, size: int, drop_last: bool = False,
              collate: Callable[[Any], Any] | None = None) -> Pipeline:
        """``self.pipeline().batch(size)``: dicts of column -> numpy array or list."""
        return self.pipeline().batch(size, drop_last, collate)
