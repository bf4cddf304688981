"""What a sample schema must satisfy before a shard is written: checked once per commit.

What Arrow accepts and the stored dataset cannot hold or use:

- a tensor shape (``dload.shape`` field metadata) that is not a JSON list of sizes whose
  product is the fixed-size list's length: every read would fail to reshape it;
- a struct without fields (``struct<>``, what ``{}`` infers to), at any depth: Parquet cannot
  store it, and the writer's error names no sample and no fix;
- a column named ``""`` (or only spaces): filters, SQL and DataFrames cannot address it;
- a column nested deeper than Parquet's readers go (50 lists in lists).
"""

from __future__ import annotations

import json
import math
import unicodedata
import warnings

import pyarrow as pa

from dload_arrow.errors import SchemaError, user_stacklevel
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.rows import SHAPE_META

__all__ = ["check_schema", "check_schema_arg"]


def check_schema(schema: pa.Schema) -> None:
    """Raise SchemaError for a column the dataset could not store or read back; warn of
    names that differ only in Unicode normalization (a filter typed one way misses the other)."""
    forms: dict[str, str] = {}
    for name in schema.names:
        if (twin := forms.setdefault(unicodedata.normalize("NFC", name), name)) != name:
            warnings.warn(f"columns {twin!a} and {name!a} differ only in Unicode normalization "
                          "(one composed, one not): they look the same in every listing; "
                          "rename one", stacklevel=user_stacklevel())
    for field in schema:
        if not field.name.strip():
            raise SchemaError(
                f"a column is named {field.name!r}: a column needs a name with a character "
                "other than a space (filters, SQL and DataFrames address it by name); rename it"
            )
        _check_shape(field)
        _check_storable(field)
        if (depth := _depth(field.type)) > _MAX_DEPTH:
            raise SchemaError(
                f"column {field.name!r} nests {depth} levels deep as Parquet stores it (a list "
                f"or map is 2, a struct 1, the value 1), past the {_MAX_DEPTH} Parquet's readers "
                f"take (type {_cut(str(field.type))}): flatten it, e.g. store its inner values "
                "as JSON text")
        if _zero_width(field.type):
            raise SchemaError(  # (pyarrow writes such a shard but cannot read it: QA review62d)
                f"column {field.name!r} holds a fixed-size list or binary of size 0 (type "
                f"{_cut(str(field.type))}), which Parquet cannot store or read back; make that "
                "level a variable-size list, pa.list_(type), whose empty value is [] (or "
                "pa.binary())")
        path = _empty_struct(field.type, field.name)
        if path is not None:
            raise SchemaError(
                f"column {field.name!r} holds a struct with no fields at {path!r} (type "
                f"{field.type}, what an empty dict {{}} becomes), which Parquet cannot store; "
                "give that struct at least one field (schema=, or a key in the samples' "
                "dicts), or drop it"
            )


# Arrow's Parquet reader refuses a schema deeper than this (50 nested lists: "too deeply
# nested"), after the writer stored it: the shard could never be read (QA cliffs56).
_MAX_DEPTH = 99


def _cut(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _depth(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return 1 + max((_depth(t.field(i).type) for i in range(t.num_fields)), default=0)
    if pa.types.is_map(t):
        return 2 + max(_depth(t.key_type), _depth(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return 2 + _depth(t.value_type)
    return 1


def _check_shape(field: pa.Field) -> None:
    meta = field.metadata or {}
    if SHAPE_META not in meta:
        return
    raw = meta[SHAPE_META]
    fix = ("set it to the tensor's shape as a JSON list, e.g. metadata={'dload.shape': "
           "'[2, 3]'} on a pa.list_(type, 6) field, or drop the metadata for a plain list")
    if not pa.types.is_fixed_size_list(field.type):
        raise SchemaError(
            f"column {field.name!r} has a tensor shape ({SHAPE_META.decode()} "
            f"{raw.decode(errors='replace')!r}) but type {field.type}: a tensor column is a "
            "fixed-size list, pa.list_(value_type, size); change the type or drop the metadata"
        )
    try:
        shape = json.loads(raw)
    except ValueError:
        shape = None
    if not (isinstance(shape, list)
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise SchemaError(
            f"column {field.name!r}: its tensor shape ({SHAPE_META.decode()} "
            f"{raw.decode(errors='replace')!r}) is not a JSON list of sizes; {fix}"
        )
    size = field.type.list_size
    if math.prod(shape) != size:
        raise SchemaError(
            f"column {field.name!r}: tensor shape {tuple(shape)} holds {math.prod(shape)} "
            f"values, but the column's fixed-size lists hold {size}; {fix}"
        )


_WAYS_OUT = {
    "interval": "store it as a number (in DuckDB, epoch(col) gives its seconds)",
    "run_end_encoded": "decode it first (pyarrow.compute.run_end_decode(col))",
    "union": "split it into one column per kind of value, or store each value as text",
}


def _check_storable(field: pa.Field) -> None:
    """Refuse the Arrow types Parquet has no type for, naming the way out."""
    found = _unstorable(field.type, field.name)
    if found is not None:
        path, what = found
        at = "" if path == field.name else f" at {path!r}"
        raise SchemaError(
            f"column {field.name!r} ({field.type}) holds values of a type Parquet cannot "
            f"store ({what}{at}); {_WAYS_OUT[what]}, or drop the column"
        )


def _unstorable(t: pa.DataType, path: str) -> tuple[str, str] | None:
    if pa.types.is_interval(t):
        return path, "interval"
    if pa.types.is_run_end_encoded(t):
        return path, "run_end_encoded"
    if pa.types.is_union(t):
        return path, "union"
    if pa.types.is_dictionary(t):
        return _unstorable(t.value_type, path)
    for i in range(t.num_fields):
        child = t.field(i)
        sub = f"{path}[]" if t.num_fields == 1 and not pa.types.is_struct(t) else (
            f"{path}.{child.name}")
        found = _unstorable(child.type, sub)
        if found is not None:
            return found
    return None


def _empty_struct(t: pa.DataType, path: str) -> str | None:
    """The path of the first struct without fields inside ``t``, or None."""
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            return path
        for i in range(t.num_fields):
            found = _empty_struct(t.field(i).type, f"{path}.{t.field(i).name}")
            if found is not None:
                return found
        return None
    if pa.types.is_map(t):
        return (_empty_struct(t.key_type, f"{path}{{key}}")
                or _empty_struct(t.item_type, f"{path}{{value}}"))
    if isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
        return _empty_struct(t.value_type, f"{path}[]")
    return None


def check_schema_arg(schema: pa.Schema, key: str | None) -> None:
    """Refuse a ``schema=`` that names a column twice, the ``key=`` column (stored as the
    keys), or ``__key__`` other than as the first text column (it need not be listed)."""
    names = schema.names
    if key is not None and key != KEY_COLUMN and key in names:
        raise SchemaError(
            f"schema= lists {key!r}, the key column (key=), whose values are stored as the "
            f"keys ({KEY_COLUMN!r}), not as a column: drop {key!r} from schema= (or copy it to "
            "another column to keep it as data too)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SchemaError(f"schema= names column {twice[0]!r} more than once; list each "
                          "column once")
    if KEY_COLUMN in names:
        i = names.index(KEY_COLUMN)
        t = schema.field(i).type
        if i != 0 or not (pa.types.is_string(t) or pa.types.is_large_string(t)
                          or pa.types.is_string_view(t)):
            raise SchemaError(
                f"schema= lists {KEY_COLUMN!r} as {schema.field(i).type} at position {i}; keys "
                f"are strings and come first: drop {KEY_COLUMN!r} from schema= (it is added)")


def warn_valueless(schema: pa.Schema, name: str) -> None:
    """Warn of a commit's columns typed from no value (``null``, ``list<null>``: None or empty
    lists in every sample the type was inferred from): no append can store a value there
    (QA migrate59: a token column whose first file held only empty lists)."""
    from dload_arrow.type_walk import holds_type

    empty = [f"{f.name!r} ({part if '.' in (part := _null_part(f.name, f.type)) else f.type})"
             for f in schema if f.name != KEY_COLUMN and holds_type(f.type, pa.types.is_null)]
    if empty:
        warnings.warn(
            f"{name!r}: column(s) {', '.join(empty)} had no value in the samples their types "
            "were inferred from (None or empty lists), and are stored so: no later append can "
            "put a value there; commit (or derive) with schema= naming the types (a map's "
            "output keeps a source's: derive(..., schema=ds.schema); from the CLI: commit "
            "files that hold values first, then append the others)", stacklevel=user_stacklevel())


def _null_part(name: str, t: pa.DataType) -> str:
    """Where a type holds null (``tokens[]: null`` for a list of them, ``m.a: null`` for a
    struct's field that had no value: QA review59b); '' where it holds none."""
    if pa.types.is_null(t):
        return f"{name}: null"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _null_part(f"{name}[]", t.value_type)
    if pa.types.is_struct(t):
        return next((p for i in range(t.num_fields)
                     if (p := _null_part(f"{name}.{t.field(i).name}", t.field(i).type))), "")
    return ""


def _zero_width(t: pa.DataType) -> bool:
    """Whether ``t`` holds a fixed-size list or binary of size 0 (a tensor with a zero axis),
    at any depth, inside extension types too (QA review62f)."""
    if isinstance(t, pa.BaseExtensionType):  # (Arrow's own tensor type too)
        return _zero_width(t.storage_type)
    if pa.types.is_dictionary(t):  # (nested: commit decodes only a column's own, QA review63)
        return _zero_width(t.value_type)
    if (pa.types.is_fixed_size_list(t) and not t.list_size) or (
            pa.types.is_fixed_size_binary(t) and not t.byte_width):
        return True
    return any(_zero_width(t.field(i).type) for i in range(t.num_fields))
