"""Checks of (key, dict) pairs and sample dicts that name the sample: a key that is not
text, a struct field its column lacks, an array that a shapeless fixed-size list would
flatten, an integer no inferred column holds."""

from __future__ import annotations

import decimal
import math
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import typed_array
from dload_arrow.errors import SchemaError, shown, surrogate_at
from dload_arrow.store.cast_check import extra_field_check

__all__ = ["empty_tensor_error", "encodes", "half_ready", "holds_set", "int_overflow_error",
           "int_rounded", "key_of", "missing_as_nulls", "refuse_extra_fields",
           "refuse_flattening", "refuse_sets", "refuse_shapes", "rows_type_text",
           "shape_refusal", "torch_advice", "without_missing"]


def refuse_flattening(rows: list[tuple[str, Any]], field: pa.Field, values: list[Any]) -> None:
    """A fixed-size list column without a tensor shape takes flat values: a 2-d or deeper
    array would be flattened, its shape lost (and arrays of other shapes accepted later)."""
    size = field.type.list_size
    for (key, _), v in zip(rows, values, strict=True):
        if isinstance(v, np.ndarray) and v.ndim > 1:
            flat = f" (v.reshape(-1): {v.shape} as {v.size})" if v.size == size else ""
            raise SchemaError(
                f"sample {key!r}, column {field.name!r}: an array of shape {v.shape}, but the "
                f"column's type {field.type} (from schema=, or the stored type of an append) "
                "records no tensor shape, so it would be stored flat and read back as a list; "
                f"pass arrays of one dimension{flat}, or give a new commit's field its shape, "
                f"pa.field({field.name!r}, <its type>, metadata={{'dload.shape': "
                f"'{list(v.shape)}'}})")
        vector = isinstance(v, list | tuple) or (isinstance(v, np.ndarray) and v.ndim == 1)
        if vector and len(v) != size:  # (QA embed65: "store a wider type" was the advice)
            raise SchemaError(
                f"sample {key!r}, column {field.name!r}: a vector of length {len(v)}, but the "
                f"column holds vectors of length {size} ({field.type})")


def refuse_extra_fields(rows: list[tuple[str, Any]], field: pa.Field, values: list[Any]) -> None:
    """Refuse a struct value with a field ``field``'s type lacks, naming key and path."""
    extra = extra_field_check(field.type)
    if extra is None or extra(values) is None:
        return  # no struct in the type (no dict keys to look at), or no field it lacks
    for (key, _), v in zip(rows, values, strict=True):
        if (path := extra([v])) is not None:
            raise SchemaError(
                f"sample {key!r}, column {field.name!r}: field {field.name + path!r} is not in "
                f"the column's type {field.type} (from schema=, the stored type of an append, "
                "or inferred from the first samples), and would be lost; drop it from the "
                "sample, or add the field to that type in a commit's schema= (samples without "
                "it hold null; an append keeps the stored type: commit the old rows and the new "
                "ones with it)"
            )


def refuse_sets(rows: list[tuple[str, Any]], field: pa.Field, values: list[Any]) -> None:
    """Refuse a set in a list or struct column: its order (hash order, which changes between runs of
    Python) would be stored, and the version id would change from run to run."""
    for (key, _), v in zip(rows, values, strict=True):
        if holds_set(v):
            raise SchemaError(
                f"sample {key!r}, column {field.name!r}: a set (or one inside its lists or "
                "dicts), whose order changes from one run of Python to the next (and with it "
                "the version id); store sorted(the_set) or a list")


def holds_set(v: Any, depth: int = 0) -> bool:
    """Whether ``v`` is a set or holds one in its lists and dicts (a list of numbers is told
    by its first item: no walk over token lists)."""
    if isinstance(v, (set, frozenset)):
        return True
    if depth > 16:
        return False
    if isinstance(v, dict):
        return any(holds_set(x, depth + 1) for x in v.values())
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (set, frozenset, list, tuple,
                                                                dict)):
        return any(holds_set(x, depth + 1) for x in v)
    return False


def key_of(k: Any, n: int, where: str) -> str:
    """Sample ``n``'s key ``k`` (an int becomes its decimal text), from ``where``."""
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        return str(int(k))
    if not isinstance(k, str) or not k:
        raise SchemaError(
            f"sample #{n}: its key ({where}) is {shown(k)}; keys must be non-empty strings "
            "(or integers)"
        )
    return k


def refuse_nonfinite_decimals(rows: list[tuple[str, Any]], col: str) -> None:
    """Refuse ``Decimal('Infinity')`` or ``Decimal('NaN')`` (Arrow's decimals hold finite
    numbers only; pyarrow's error named no sample, QA notebook61)."""
    for key, r in rows:
        v = r.get(col)
        if isinstance(v, decimal.Decimal) and not v.is_finite():
            raise SchemaError(
                f"sample {key!r}, column {col!r}: {v!r} has no decimal type (Arrow's decimals "
                "hold finite numbers): store None for a missing value, or the column as floats "
                "(float(v) keeps inf and nan)")


def not_unicode(what: str, text: str) -> SchemaError:
    """The refusal of text holding a lone surrogate (``'\\udcff'``, what a byte that is not
    UTF-8 becomes when decoded with errors='surrogateescape'): UTF-8 cannot store it."""
    return SchemaError(
        f"{what} {text!r} is not valid Unicode (it holds a lone surrogate, as text decoded "
        "with errors='surrogateescape' does) and cannot be stored as UTF-8; decode it with "
        "its encoding, or fix it, e.g. text.encode('utf-8', 'surrogateescape').decode("
        "'utf-8', 'replace')")


def encodes(text: str) -> bool:
    return surrogate_at(text) is None


def _ints(value: Any) -> Iterator[int]:
    """The Python ints in ``value``, inside lists, tuples and dicts too (bools are not)."""
    if isinstance(value, int) and not isinstance(value, bool):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _ints(v)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _ints(v)


def int_overflow_error(rows: list[tuple[str, Mapping[str, Any]]], col: str) -> SchemaError:
    """The error for column ``col``, whose type inference overflowed: the first sample with
    an integer outside int64 (at the top level or inside a list or dict), and what holds it."""
    found = [(k, v, v is r.get(col)) for k, r in rows for v in _ints(r.get(col))]
    big = next((f for f in found if not -(2**63) <= f[1] < 2**63), None)
    if big is None:  # not an int of ours that overflowed: say what we know
        return SchemaError(f"column {col!r}: a value does not fit any integer column; store "
                           "the column as a string or a float, or pass schema=")
    key, value, top = big
    neg = next(((k, v) for k, v, _ in found if v < 0), None)
    where = "" if top else " (inside a list or dict)"
    if not 0 <= value < 2**64:
        fits = "store it as a string or a float (no integer column holds it)"
    elif neg is None:
        fits = (f"declare the column unsigned: schema=pa.schema([({col!r}, pa.uint64())]), "
                "or store it as a string or a float") if top else (
                f"declare its integers unsigned, e.g. schema=pa.schema([({col!r}, "
                "pa.list_(pa.uint64()))]) for a list of ints, or store them as strings or floats")
    else:
        fits = (f"an unsigned column (uint64) would hold it, but sample {neg[0]!r} has "
                f"{neg[1]}, a negative value: no integer column holds both; store the column "
                "as a string or a float")
    return SchemaError(
        f"sample {key!r}, column {col!r}: integer {shown(value)}{where} is outside the range of a "
        f"signed 64-bit integer column, the type inferred; {fits}")


def shape_refusal(key: str, field: pa.Field, arr: np.ndarray, shape: tuple[int, ...]
                  ) -> SchemaError:
    """The refusal of an array whose shape is not its tensor column's, with the nested-list
    type of the column's rank and number type that stores varying shapes (QA robotics60: the
    example was 2-D float32 for a uint8 image, and suggested schema= on an append)."""
    leaf = {"bool": "bool_", "float": "float32", "double": "float64", "halffloat": "float16"
            }.get(str(field.type.value_type), str(field.type.value_type))
    nested = "pa.list_(" * len(shape) + f"pa.{leaf}()" + ")" * len(shape)
    return SchemaError(
        f"sample {key!r}, column {field.name!r}: a tensor of shape {tuple(arr.shape)}, but the "
        f"column holds tensors of shape {tuple(shape)} (its first sample's, or the stored "
        "column's on an append); reshape it, or store arrays whose shapes vary as nested "
        f"lists: commit (an append keeps the stored type) with a schema= whose {field.name!r} "
        f"field is {nested} (a schema names every column: the others as they are)")


def refuse_shapes(samples: Any, mod: str) -> None:
    """Refuse inputs that look like data but are not rows: a dict, a Series."""
    if isinstance(samples, Mapping):
        ranked = any(getattr(v, "ndim", 1) > 1 for v in samples.values())  # (QA robotics60)
        table = ("pl.DataFrame(d) (polars takes an (N, 32, 32, 3) array as a column of "
                 "(32, 32, 3) tensors; pa.table and pandas take 1-D columns only)" if ranked
                 else "pa.table(d) or a DataFrame")
        raise SchemaError(
            f"cannot commit a dict (its keys {shown(list(samples)[:5])} would be read as "
            f"samples): a dict of columns is a table, pass {table}; one "
            "sample goes in a list, [d]; a dict of samples maps each key to a dict of columns"
        )
    if mod.startswith(("pandas", "polars")) and hasattr(samples, "to_frame") and not hasattr(
            samples, "columns"):
        raise SchemaError(
            f"cannot commit a {mod.split('.')[0]} Series: a commit takes rows of columns; pass "
            "series.to_frame() (one column, named after the series)"
        )


def empty_tensor_error(key: str, name: str, arr: Any) -> SchemaError:
    """A zero-size numpy tensor (no boxes: shape (0, 4)) refused, with the nested-list
    schema that stores it as ``[]`` beside others of any first dimension, in its own dtype
    and inner shape (QA detect62, review62b)."""
    then = " (then it is [])" if arr.shape[0] == 0 else ""
    return SchemaError(
        f"sample {key!r}, column {name!r}: a tensor of shape {arr.shape} holds no element and "
        "cannot be a fixed-size column's; where the first dimension varies (boxes per image), "
        f"store lists: schema= with {name!r} as {rows_type_text(arr)}{then}")


def rows_type_text(arr: Any) -> str:
    """The nested-list type that stores arrays like ``arr`` of any first dimension, as code:
    ``pa.list_(pa.list_(pa.float32(), 4))`` for (N, 4) float32 rows."""
    leaf = "bool_" if arr.dtype.kind == "b" else arr.dtype.name
    inner = f"pa.{leaf if hasattr(pa, leaf) else 'float64'}()"  # (no pa.float128)
    for d in reversed(arr.shape[1:]):  # (a zero axis: a variable list, [] when empty)
        inner = f"pa.list_({inner}, {d})" if d else f"pa.list_({inner})"
    return f"pa.list_({inner})"


def half_ready(v: Any) -> Any:
    """A float32 numpy array or scalar as float64 (exact), for a float16 column (QA embed65),
    in a list too (``list(emb)``: QA review65b)."""
    if isinstance(v, np.ndarray | np.float32) and v.dtype == np.float32:
        return v.astype(np.float64)
    if isinstance(v, list) and any(isinstance(x, np.float32 | np.ndarray | list) for x in v):
        return [half_ready(x) for x in v]
    return v


def torch_advice(v: Any) -> str | None:
    """What to give instead of ``v`` when it is a torch tensor (QA embed65, review65b): a
    tensor is not a value Arrow takes, and its repr is every value."""
    if type(v).__module__ == "torch" and hasattr(v, "numpy"):
        return ("is a torch tensor, which is not stored as one: give its numpy array, "
                "t.detach().cpu().numpy() (a tensor column of its shape and dtype; bfloat16 as "
                ".float() first)")
    return None


def without_missing(values: list[Any]) -> list[Any]:
    """``values`` with pandas' NaT and NA (missing values, which Arrow refuses) as None."""
    if "pandas" not in sys.modules or not any(
            k.__name__ in _PANDAS_MISSING for k in set(map(type, values))):
        return values
    return [None if type(v).__name__ in _PANDAS_MISSING else v for v in values]


_PANDAS_MISSING = ("NaTType", "NAType")  # (pd.NA: a row of an Int64 column, QA dtypes66)


def int_rounded(v: Any, dtype: np.dtype) -> bool:
    """Whether ``v`` holds an int (QA dtypes66: 2049 into float16 was stored as 2048.0)
    that ``dtype`` stores as another number."""
    if isinstance(v, list | tuple):
        return any(int_rounded(x, dtype) for x in v)
    if isinstance(v, int | np.integer) and not isinstance(v, bool | np.timedelta64):
        try:  # (compared as ints: numpy's uint64 2**64-1 equals its float64, QA review66b)
            with np.errstate(over="ignore"):
                f = float(dtype.type(v))
        except OverflowError:
            return True
        return not math.isfinite(f) or int(f) != int(v)
    return False


def missing_as_nulls(values: list[Any], t: pa.DataType) -> pa.Array | None:
    """``values`` as an array of ``t`` with pandas' NA and NaT inside lists and dicts as nulls
    (a list of a nullable Int64 column holds pd.NA: pyarrow's "Could not convert <NA>", QA
    review66b); None when they hold none, or the array still does not build."""
    if "pandas" not in sys.modules:
        return None
    found = []

    def clean(v: Any) -> Any:
        if type(v).__name__ in _PANDAS_MISSING:
            found.append(v)
            return None
        if isinstance(v, list | tuple):  # (a namedtuple takes its fields: QA review66d)
            items = [clean(x) for x in v]
            return items if isinstance(v, list) else type(v)(*items) if hasattr(
                v, "_fields") else tuple(items)
        return {k: clean(x) for k, x in v.items()} if isinstance(v, dict) else v

    cleaned = [clean(v) for v in values]
    if not found:
        return None
    try:
        return typed_array(cleaned, t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError,
            ValueError, OverflowError):
        return None
