"""Row filters that run as Arrow compute kernels: no Acero plan, no pandas import.

``RecordBatch.filter(expression)`` builds an Acero plan for every call (about 200 us for a
200-row batch here) and imports ``pyarrow.dataset``, which imports pandas when it is installed
(0.3-0.45 s, once per process and per DataLoader worker). A :class:`RowFilter` carries the
same test twice: as the Arrow ``expression`` (for pyarrow datasets and for display) and as a
function computing the boolean mask from the columns with compute kernels (about 60 us for the
same batch). :func:`filter_rows` uses the mask when it has one; a plain expression (one a user
passed to ``Pipeline.filter``) still goes through Arrow's own ``filter``.

A row whose mask is null is dropped, as Arrow's expression filter and SQL's ``WHERE`` do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Predicate", "RowFilter", "filter_rows"]

Data = TypeVar("Data", pa.RecordBatch, pa.Table)
Mask: TypeAlias = Callable[[pa.RecordBatch | pa.Table], pa.Array | pa.ChunkedArray]


class RowFilter:
    """A row filter: an Arrow ``expression`` and ``mask``, the same test as compute calls.

    Args:
        expression: the filter as an Arrow expression.
        mask: returns, for a batch or table, a boolean array with one entry per row (null
            drops the row). It raises ``pyarrow.ArrowInvalid`` when a column it needs is
            missing, as Arrow's expression filter does.
    """

    __slots__ = ("expression", "mask")

    def __init__(self, expression: pc.Expression, mask: Mask) -> None:
        self.expression = expression
        self.mask = mask

    def __and__(self, other: RowFilter) -> RowFilter:
        """Rows passing both filters (SQL's AND: false wins over null)."""
        return RowFilter(self.expression & other.expression, _Both(self.mask, other.mask))

    def __str__(self) -> str:
        return str(self.expression)

    def __repr__(self) -> str:
        return f"RowFilter({self.expression})"


class _Both:
    """The mask of two filters ANDed (an object, so that filters pickle)."""

    __slots__ = ("first", "second")

    def __init__(self, first: Mask, second: Mask) -> None:
        self.first, self.second = first, second

    def __call__(self, data: pa.RecordBatch | pa.Table) -> pa.Array | pa.ChunkedArray:
        return pc.and_kleene(self.first(data), self.second(data))


Predicate: TypeAlias = RowFilter | pc.Expression


def filter_rows(data: Data, predicate: Predicate) -> Data:
    """The rows of ``data`` (a RecordBatch or Table) that ``predicate`` keeps."""
    if isinstance(predicate, RowFilter):
        return data.filter(predicate.mask(data))
    return data.filter(predicate)
