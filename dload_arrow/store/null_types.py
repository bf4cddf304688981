"""A value in a column whose type holds ``null``: which field was never given a value, and
the type to commit with (the stored type and the value's merged, not the value's alone).

A column typed from samples that never held a value in some field (``segments[].image``
while the first 1,024 documents were text only) has ``null`` there, and a later value in
that field does not fit. The advice names the field and a type that takes every sample:
the column's type with the value's filling its null fields (QA multimodal64: the type of the
failing sample alone made every earlier one fail).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dload_arrow.arrays import inferred_type
from dload_arrow.errors import SchemaError, shown

__all__ = ["null_type_error", "type_code"]


def _null_paths(t: pa.DataType, path: str) -> list[str]:
    """The paths of the null fields in ``t`` (``path`` for ``t`` itself)."""
    if pa.types.is_null(t):
        return [path]
    if pa.types.is_struct(t):
        return [p for i in range(t.num_fields)
                for p in _null_paths(t.field(i).type, f"{path}.{t.field(i).name}")]
    if getattr(t, "value_type", None) is not None and t.num_fields:
        return _null_paths(t.value_type, f"{path}[]")
    return []


def _merged(t: pa.DataType, value: Any) -> pa.DataType | None:
    """``t`` with its null fields typed as ``value`` types them (None: no merge)."""
    try:
        got = inferred_type([value])
        return pa.unify_schemas([pa.schema([("c", t)]), pa.schema([("c", got)])],
                                promote_options="permissive").field("c").type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return None


def type_code(t: pa.DataType | str) -> str:
    """How to write the type ``t`` in Python: ``pa.int64()``, ``pa.list_(pa.int64())``, or
    ``<its type: struct<...>>`` for one with no short form."""
    t = str(t)
    if t.startswith("list<item: ") and t.endswith(">"):  # [1, 2]: pa.list_(pa.int64())
        return f"pa.list_({type_code(t[len('list<item: '):-1])})"
    t = {"double": "float64", "float": "float32", "halffloat": "float16", "bool": "bool_"}.get(t, t)
    return f"pa.{t}()" if t.replace("_", "").isalnum() else f"<its type: {t}>"


def null_type_error(key: str, field: pa.Field, value: Any, stated: bool,
                    chunk: int) -> SchemaError:
    """The error for ``value`` (sample ``key``) in ``field``, whose type holds null."""
    paths = _null_paths(field.type, field.name) or [field.name]  # (all: QA review64d)
    path = " and ".join(paths)
    merged = _merged(field.type, value)
    code = type_code(merged) if merged is not None else "<its type>"
    where = (f"schema= gives {field.name!r} the type {field.type}, with null at {path}"
             if stated else
             f"the column's type is {field.type}: "
             f"{'it' if path in (field.name, field.name + '[]') else path} "
             f"{'was' if len(paths) == 1 else 'were'} None"
             f"{'' if pa.types.is_null(field.type) else ' (or an empty list)'} in every sample "
             f"its type was inferred from (the first {chunk} of the commit, or of the commit "
             "that stored the dataset an append goes to)")
    return SchemaError(
        f"sample {key!r}, column {field.name!r}: value {shown(value)}, but {where}; commit "
        f"with its type, e.g. schema=pa.schema([({field.name!r}, {code})]) (an append keeps "
        "the stored types: commit the old rows and the new ones with it)")
