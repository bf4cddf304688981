"""str and bytes inside a list, struct or map column: one kind per field, as at the top.

``pa.array`` turns ``b"x"`` into ``"x"`` in a string field and ``"x"`` into ``b"x"`` in a
binary one, and infers binary for a nested field holding both. A top-level column refuses
the other kind (``lossless._kind_refusal``); inside a document's segments the same mix was
stored silently, every text value coming back as bytes (QA multimodal64). This walks each
sample's nested value beside the column's type and names the first value of the other kind
by its path (``segments[].text``). Types with no string or binary field inside cost nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from dload_arrow.type_walk import holds_type, is_list_type, is_text_type

__all__ = ["COLUMN", "nested_kind_refusal", "shape_clash"]

COLUMN = "\x00column"  # in a reason: the column's name (check_lossless puts it in)

_BYTES = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)


def _kind(t: pa.DataType) -> type | None:
    """The Python kind the field ``t`` stores: str, bytes, or None for other types."""
    if is_text_type(t):
        return str
    if any(f(t) for f in _BYTES):
        return bytes
    return None


def _misfit(v: Any, t: pa.DataType, path: str) -> tuple[str, type, type] | None:
    """``(path, kind given, kind stored)`` of the first str/bytes value in ``v`` of the other
    kind than its field in ``t``; None when there is none."""
    if v is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    kind = _kind(t)
    if kind is not None:
        other = bytes if kind is str else str
        return (path, other, kind) if type(v) is other else None
    if pa.types.is_struct(t) and isinstance(v, Mapping):
        for i in range(t.num_fields):
            f = t.field(i)
            got = _misfit(v.get(f.name), f.type, f"{path}.{f.name}")
            if got is not None:
                return got
    elif pa.types.is_map(t):
        pairs = v.items() if isinstance(v, Mapping) else v if isinstance(v, list) else ()
        for pair in pairs:
            if isinstance(pair, tuple) and len(pair) == 2:
                got = (_misfit(pair[0], t.key_type, f"{path}{{key}}")
                       or _misfit(pair[1], t.item_type, f"{path}{{value}}"))
                if got is not None:
                    return got
    elif is_list_type(t) and isinstance(v, list | tuple):
        for x in v:
            got = _misfit(x, t.value_type, f"{path}[]")
            if got is not None:
                return got
    return None


def nested_kind_refusal(t: pa.DataType, kinds: set[type], values: Sequence[Any]) -> Any:
    """A refusal (``lossless.check_lossless``) of str in a binary field or bytes in a string
    field inside the nested column ``t``; None for a flat column or one with neither."""
    if t.num_fields == 0 or not holds_type(t, lambda x: _kind(x) is not None):
        return None

    def refusal(v: Any) -> str | None:
        got = _misfit(v, t, "")
        if got is None:
            return None
        path, given, stored = got
        fix = ("encode it (v.encode()), or give the field text in every sample" if stored is
               bytes else "decode it (v.decode()) if it is text, or give the field bytes in "
               "every sample")
        where = COLUMN + path
        mixed = " (samples giving both there are inferred as bytes)" if stored is bytes else ""
        return (f"holds {given.__name__} at {where}, but that field holds "
                f"{'bytes' if stored is bytes else 'text (str)'}{mixed}; a field holds one "
                f"or the other: {fix}")
    return refusal


def _shape(v: Any) -> str:
    """What a Python value is, in the words a shape clash is told in."""
    if isinstance(v, Mapping):
        return "a dict (a struct)"
    if isinstance(v, list | tuple):
        return "a list"
    if isinstance(v, bool):
        return "a bool"
    if isinstance(v, int | float):
        return "a number"
    return "text" if isinstance(v, str) else "bytes" if isinstance(v, bytes) else (
        f"a {type(v).__name__}")


def shape_clash(first: Any, other: Any, path: str) -> str | None:
    """Where ``other`` (a sample's value) first takes another shape than ``first`` (an
    earlier sample's): ``"ann[0].segmentation is a dict (a struct) where earlier values
    have a list"`` (QA detect62: COCO's RLE beside polygons was refused without the path)."""
    if first is None or other is None:
        return None
    a, b = _shape(first), _shape(other)
    if a != b:
        return f"{path} is {b} where earlier values have {a}"
    if isinstance(first, Mapping):
        return next((got for k, v in other.items() if k in first
                     if (got := shape_clash(first[k], v, f"{path}.{k}"))), None)
    if isinstance(first, list | tuple):
        rep = next((x for x in [*first, *other] if x is not None), None)
        return next((got for i, x in enumerate(other)
                     if (got := shape_clash(rep, x, f"{path}[{i}]"))), None)
    return None
