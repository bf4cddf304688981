"""Walks of an Arrow type's tree: whether it holds a type of some kind, its Parquet leaves.

Checks that must see through nesting (a time inside a list of structs, a list view inside a
map) walk the type tree the same way: a dictionary by its value type, every other type by
its child fields (list items, struct fields, a map's key and item).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

__all__ = ["holds_type", "is_list_type", "is_text_type", "leaf_count", "missing_fields"]


def holds_type(t: pa.DataType, match: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``t``, or a type nested in it, satisfies ``match``."""
    if match(t):
        return True
    if pa.types.is_dictionary(t):
        return holds_type(t.value_type, match)
    return any(holds_type(t.field(i).type, match) for i in range(t.num_fields))


def is_list_type(t: pa.DataType) -> bool:
    """A list of any kind: list, large list, fixed-size list, list view (its ``value_type``)."""
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def is_text_type(t: pa.DataType) -> bool:
    """String, large string or string view."""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def leaf_count(t: pa.DataType) -> int:
    """The Parquet leaf columns (column chunks) a value of type ``t`` is stored in."""
    if pa.types.is_struct(t):
        return sum(leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return leaf_count(t.key_type) + leaf_count(t.item_type)
    if is_list_type(t):
        return leaf_count(t.value_type)
    if isinstance(t, pa.ExtensionType):
        return leaf_count(t.storage_type)
    return 1


def missing_fields(want: pa.DataType, got: pa.DataType, path: str) -> list[str]:
    """The paths (``segments[].image``) of the struct fields ``want`` has and ``got``, the
    type of the same column, lacks (an append fills them with nulls)."""
    if is_list_type(want) and is_list_type(got):
        return missing_fields(want.value_type, got.value_type, f"{path}[]")
    if pa.types.is_map(want) and pa.types.is_map(got):
        return missing_fields(want.item_type, got.item_type, f"{path}{{value}}")
    if not (pa.types.is_struct(want) and pa.types.is_struct(got)):
        return []
    have = {got.field(i).name: got.field(i).type for i in range(got.num_fields)}
    out: list[str] = []
    for i in range(want.num_fields):
        f = want.field(i)
        if f.name not in have:
            out.append(f"{path}.{f.name}")
        else:
            out += missing_fields(f.type, have[f.name], f"{path}.{f.name}")
    return out
