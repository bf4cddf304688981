"""How list columns are stored: each list's value field named ``item`` (Parquet writers name
it ``element``, a DuckDB result ``l``: the same rows from any source are one version, QA
chat65), and list views with other value types: pyarrow casts no list view to another
(``list_view<struct<string_view>>`` to ``list_view<struct<string>>``: "Unsupported cast"), and
Parquet's writer cannot slice a string view inside a struct inside one (QA review65, 65b), so
the values are cast and the list view rebuilt from its offsets and sizes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import numpy_values

__all__ = ["holds_view", "is_list_view", "item_named", "list_view_with", "views_for"]


def is_list_view(t: pa.DataType) -> bool:
    """A list view or a large list view."""
    return bool(pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def list_view_with(col: pa.Array, value: pa.Field, large: bool | None = None) -> pa.Array:
    """``col`` (a list view) with its values cast to ``value``'s type; ``large``: of that kind
    (default: ``col``'s own; a large list view into a list view, QA review65c)."""
    large = pa.types.is_large_list_view(col.type) if large is None else large
    kind, cls, width = (pa.large_list_view, pa.LargeListViewArray, "int64") if large else (
        pa.list_view, pa.ListViewArray, "int32")
    values = cast_views(col.values, value.type)  # (views in it: QA review66)
    offsets, sizes = (pa.array(numpy_values(a).astype(width)) for a in (col.offsets, col.sizes))
    out = cls.from_arrays(offsets, sizes, values, mask=col.is_null() if col.null_count else None)
    return out if out.type == kind(value) else out.cast(kind(value))


def item_named(t: pa.DataType) -> pa.DataType:
    """``t`` with every list's value field named ``item`` , nothing else
    changed: a commit's ``schema=``."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        f = t.value_field.with_name("item").with_type(item_named(t.value_type))
        return (pa.list_(f, t.list_size) if pa.types.is_fixed_size_list(t) else
                pa.large_list(f) if pa.types.is_large_list(t) else pa.list_(f))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(item_named(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(item_named(t.key_type)),
                       t.item_field.with_type(item_named(t.item_type)), t.keys_sorted)
    return t


def views_for(col: pa.Array, want: pa.DataType | None = None) -> pa.Array:
    """``col`` with each list view made a list where ``want`` holds a list (any depth, struct
    fields matched by name; every view where ``want`` is None or says nothing, as inside
    fixed-size lists and maps), its rows gathered in order from its offsets and sizes, and
    the views ``want`` keeps left as they are: pyarrow 26 casts a view to a list wrong
    (``[[5, 6]]`` as ``[[]]``, nested in a struct too) or crashes, and keeps views right (QA
    review65d-g). String views among a converted view's values become strings (``take`` has
    none)."""
    t, mask = col.type, (col.is_null() if col.null_count else None)
    inner = getattr(want, "value_type", None)
    if is_list_view(t) and want is not None and is_list_view(want):
        values = views_for(child := col.values, inner)  # (each .values is a new object)
        if values is child:
            return col
        cls = pa.LargeListViewArray if pa.types.is_large_list_view(t) else pa.ListViewArray
        return cls.from_arrays(pa.array(numpy_values(col.offsets)),
                               pa.array(numpy_values(col.sizes)), values, mask=mask)
    if is_list_view(t):
        values = views_for(col.values, inner)
        values = values.cast(_unviewed(values.type))
        offsets = numpy_values(col.offsets).astype(np.int64)
        sizes = numpy_values(col.sizes).astype(np.int64)
        if col.null_count:
            sizes = np.where(numpy_values(col.is_null()), 0, sizes)
        ends = np.cumsum(sizes)
        index = np.repeat(offsets - (ends - sizes), sizes) + np.arange(
            int(ends[-1]) if len(ends) else 0)
        large = pa.types.is_large_list_view(t)
        cls = pa.LargeListArray if large else pa.ListArray
        starts = np.concatenate([[0], ends]).astype(np.int64 if large else np.int32)
        return cls.from_arrays(pa.array(starts), values.take(pa.array(index)), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = views_for(child := col.values, inner)
        if values is child:
            return col
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(pa.array(numpy_values(col.offsets)), values, mask=mask)
    if pa.types.is_struct(t):  # (field(), not flatten(): that puts the row's nulls in them)
        kids = [col.field(i) for i in range(t.num_fields)]
        named = want if want is not None and pa.types.is_struct(want) else None
        new = [views_for(k, named.field(f.name).type if named is not None
                         and named.get_field_index(f.name) >= 0 else None)
               for k, f in zip(kids, t, strict=True)]
        if all(a is b for a, b in zip(new, kids, strict=True)):
            return col
        return pa.StructArray.from_arrays(new, fields=[t.field(i).with_type(k.type) for i, k in
                                                       enumerate(new)], mask=mask)
    if not holds_view(t):
        return col
    if pa.types.is_fixed_size_list(t):  # (every view in these made a list, QA review65f)
        size = t.list_size
        values = views_for(col.values.slice(col.offset * size, len(col) * size))
        return pa.FixedSizeListArray.from_arrays(values, size, mask=mask)
    if pa.types.is_map(t):
        keys, items = (views_for(a) for a in (col.keys, col.items))
        return pa.MapArray.from_arrays(pa.array(numpy_values(col.offsets)), keys, items,
                                       mask=mask)
    return col


def _unviewed(t: pa.DataType) -> pa.DataType:
    """``t`` with string and binary views plain, at any depth of lists and structs."""
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return pa.string() if pa.types.is_string_view(t) else pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        f = t.value_field.with_type(_unviewed(t.value_type))
        return pa.large_list(f) if pa.types.is_large_list(t) else pa.list_(f)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_unviewed(f.type)) for f in t])
    return t


def holds_view(t: pa.DataType) -> bool:
    """Whether ``t`` holds a list view at any depth."""
    from dload_arrow.type_walk import holds_type

    return holds_type(t, is_list_view)


def cast_views(col: pa.Array, want: pa.DataType) -> pa.Array:
    """``col`` cast to ``want``, where pyarrow casts no list view into a list view of other
    values and casts a view into a list wrong (``views_for``): a view into a view, at any
    depth of lists and structs, rebuilt from its offsets and sizes around its values cast the
    same way (QA review66: ``list_view<list_view>`` into ``list_view<list>`` lost its values
    or crashed; ``struct<list_view<int32>>`` into one of int64 was refused)."""
    t = col.type
    if not holds_view(t):
        return col.cast(want)
    if is_list_view(t) and is_list_view(want):
        return list_view_with(col, want.value_field, pa.types.is_large_list_view(want))
    col = views_for(col, want)  # views made lists where want holds lists
    t, mask = col.type, (col.is_null() if col.null_count else None)
    if not holds_view(t):
        return col.cast(want)
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(f(t) for f in lists) and any(f(want) for f in lists):
        large = pa.types.is_large_list(want)
        offsets = pa.array(numpy_values(col.offsets).astype(np.int64 if large else np.int32))
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(offsets, cast_views(col.values, want.value_type),
                               type=want, mask=mask)
    if (pa.types.is_struct(t) and pa.types.is_struct(want)
            and [f.name for f in t] == [f.name for f in want]):
        kids = [cast_views(col.field(i), want.field(i).type) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(want), mask=mask)
    return col.cast(want)
