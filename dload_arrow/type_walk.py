"""Whether an Arrow type holds, at any depth, a type of some kind.

Checks that must see through nesting (a time inside a list of structs, a list view inside a
map) walk the type tree the same way: a dictionary by its value type, every other type by
its child fields (list items, struct fields, a map's key and item).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

__all__ = ["holds_type"]


def holds_type(t: pa.DataType, match: Callable[[pa.DataType], bool]) -> bool:
    """Whether ``t``, or a type nested in it, satisfies ``match``."""
    if match(t):
        return True
    if pa.types.is_dictionary(t):
        return holds_type(t.value_type, match)
    return any(holds_type(t.field(i).type, match) for i in range(t.num_fields))
