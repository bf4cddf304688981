"""List view columns with other value types: pyarrow casts no list view to another
(``list_view<struct<string_view>>`` to ``list_view<struct<string>>``: "Unsupported cast"), and
Parquet's writer cannot slice a string view inside a struct inside one (QA review65, 65b), so
the values are cast and the list view rebuilt from its offsets and sizes."""

from __future__ import annotations

import pyarrow as pa

from dload_arrow.arrays import numpy_values

__all__ = ["is_list_view", "list_view_with"]


def is_list_view(t: pa.DataType) -> bool:
    """A list view or a large list view."""
    return bool(pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def list_view_with(col: pa.Array, value: pa.Field) -> pa.Array:
    """``col`` (a list view) with its values cast to ``value``'s type, of the same kind."""
    large = pa.types.is_large_list_view(col.type)
    kind, cls = (pa.large_list_view, pa.LargeListViewArray) if large else (
        pa.list_view, pa.ListViewArray)
    values = col.values.cast(value.type)
    out = cls.from_arrays(pa.array(numpy_values(col.offsets)), pa.array(numpy_values(
        col.sizes)), values, mask=col.is_null() if col.null_count else None)
    return out if out.type == kind(value) else out.cast(kind(value))
