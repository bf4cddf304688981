"""A pandas DataFrame as the table a commit takes: ``pa.Table.from_pandas``, with what it
refuses or would store wrong caught first and named, as for sample dicts.

- A column of equal-shaped n-dimensional numpy arrays (what ``to_pandas()`` gives for a tensor
  column) becomes a tensor column (Arrow's conversion refuses them).
- A cell Arrow cannot store, or a Python int beyond int64, is a SchemaError naming its column.
- An object column holding a set (stored as a list in hash order: another version id each
  run) or text among bytes (stored encoded) is refused, as sample dicts are.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.errors import SchemaError, shown

__all__ = ["pandas_table"]


def _missing(v: Any) -> bool:
    """None, NaN, pandas' NA or NaT: what pandas puts in a missing cell of an object column."""
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ in (
        "NAType", "NaTType")


def _tensor_cells(col: Any) -> bool:
    """Whether a pandas object column holds numeric arrays of one shape of two or more
    dimensions (pandas' own conversion refuses those; one-dimensional arrays it turns into
    list columns, ragged or not) in every present cell (None and NaN are missing)."""
    shape = None
    for v in col:
        if _missing(v):
            continue
        if not isinstance(v, np.ndarray) or v.ndim < 2 or v.dtype.kind not in "biuf":
            return False
        if shape is None:
            shape = v.shape
        elif v.shape != shape:
            return False
    return shape is not None


def pandas_table(df: Any, schema: pa.Schema | None = None) -> pa.Table:
    """``df`` as a table: ``pa.Table.from_pandas``, except that columns of equal-shaped
    n-dimensional numpy arrays (what ``to_pandas()`` gives for a tensor column) become
    tensor columns (its conversion refuses them). Columns ``schema`` names are converted to
    its types (a map column's cells, lists of pairs, cannot be told from a list otherwise)."""
    dup = df.columns[df.columns.duplicated()]
    if len(dup):
        raise SchemaError(
            f"the DataFrame has {len(dup)} duplicate column name(s), e.g. {shown(dup[0])}: a "
            "dataset's columns need distinct names; rename them (df.columns = [...]) or drop "
            "the copies (df.loc[:, ~df.columns.duplicated()])"
        )
    given = {f.name: f.type for f in schema} if schema is not None else {}
    typed = {c: given[str(c)] for c in df.columns if str(c) in given
             and not (df[c].dtype == object and _tensor_cells(df[c]))}  # (tensors: below)
    if typed:
        return _typed(df, typed)
    from dload_arrow.store.pairs import tensor_column  # pairs -> rows -> (lazily) this module

    tensors = [c for c in df.columns if df[c].dtype == object and _tensor_cells(df[c])]
    if not tensors:
        return _refuse_object_values(df, _from_pandas(df))
    rest = df.drop(columns=tensors)
    plain = _refuse_object_values(rest, _from_pandas(rest))
    fields, arrays = [], []
    for c in df.columns:
        if c in tensors:
            values = [None if _missing(v) else v for v in df[c]]
            field, arr = tensor_column(str(c), values)
        else:
            i = plain.schema.get_field_index(str(c))
            field, arr = plain.schema.field(i), plain.column(i).combine_chunks()
        fields.append(field)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _typed(df: Any, typed: dict[Any, pa.DataType]) -> pa.Table:
    """``df`` with the columns of ``typed`` converted to their types, the others as usual."""
    rest = df.drop(columns=list(typed))
    plain = pandas_table(rest) if len(rest.columns) else None
    fields, arrays = [], []
    for c in df.columns:
        if c in typed:
            try:
                try:
                    arr = pa.array(df[c], type=typed[c], from_pandas=True)
                except pa.ArrowInvalid:  # (N, 4) arrays of several N: rows of rows (Arrow
                    # takes 1-D arrays only; QA graphs65)
                    if not any(getattr(v, "ndim", 0) > 1 for v in df[c]):
                        raise
                    arr = pa.array([_rows(v) for v in df[c]], type=typed[c], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
                    OverflowError) as e:
                raise SchemaError(f"column {str(c)!r}: its values do not convert to the type "
                                  f"schema= gives it, {typed[c]} ({e}); check the type, or "
                                  "convert the column yourself") from e
            # the checks of an inferred column: a set (hash order), text among bytes
            _refuse_object_values(df[[c]], pa.table({str(c): arr}))
            fields.append(pa.field(str(c), typed[c]))
            arrays.append(arr)
        else:
            assert plain is not None
            i = plain.schema.get_field_index(str(c))
            fields.append(plain.schema.field(i))
            arrays.append(plain.column(i).combine_chunks())
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _rows(v: Any) -> Any:
    """An array of 2 or more dimensions as a list of its rows (1-D arrays), others as given."""
    return [_rows(x) for x in v] if isinstance(v, np.ndarray) and v.ndim > 1 else v


def _refuse_object_values(df: Any, table: pa.Table) -> pa.Table:
    """``table``, once the object columns of ``df`` whose type could hold them are checked,
    as sample dicts are, for a set (hash order) and text among bytes (stored encoded)."""
    from dload_arrow.store.pair_checks import holds_set  # pairs -> rows -> this module

    for c in df.columns:
        i = table.schema.get_field_index(str(c))
        if df[c].dtype != object or i < 0:
            continue
        t = table.schema.field(i).type
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            if str in set(map(type, df[c])):  # (one C loop; the row only when there is one)
                at = next(r for r, v in enumerate(df[c]) if isinstance(v, str))
                raise SchemaError(
                    f"column {str(c)!r}: row {at} holds the text {shown(df[c].iloc[at])} "
                    "among bytes; a column holds one or the other: encode the text "
                    f"(df[{str(c)!r}].map(lambda v: v.encode() if isinstance(v, str) else v)) "
                    "or decode the bytes")
        elif pa.types.is_nested(t) and _may_hold_set(df[c]):
            row = next((r for r, v in enumerate(df[c]) if holds_set(v)), None)
            if row is not None:
                raise SchemaError(f"column {str(c)!r}: row {row} holds a set (or one inside "
                                  "its lists), whose order changes between Python runs (and "
                                  "the version id with it); store sorted lists")
    return table


def _may_hold_set(col: Any) -> bool:
    """Whether a set may be in the cells of ``col``: one, or a container in a cell's items
    (the types of two levels, in C loops; deeper sets are looked for only then)."""
    top = set(map(type, col))
    if top & {set, frozenset}:
        return True
    holders = {list, tuple, np.ndarray}
    seqs = col if top <= holders else [v for v in col if type(v) in holders] if top & (
        holders) else []
    inner = set(map(type, itertools.chain.from_iterable(seqs)))
    return bool(inner & {set, frozenset, list, tuple, dict}) or dict in top


def _from_pandas(df: Any) -> pa.Table:
    """``pa.Table.from_pandas(df)``, with a cell Arrow cannot store refused naming its column
    and value (as for sample dicts) instead of Arrow's bare ArrowTypeError."""
    refused = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError,
               TypeError)  # (TypeError: Decimal('Infinity'), QA notebook61)
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except refused as e:
        for c in df.columns:  # the column (and then the cell) Arrow refuses
            try:
                pa.Table.from_pandas(df[[c]], preserve_index=False)
            except OverflowError as why:  # a Python int beyond 64 bits in an object column
                depth = _depth(df[c])
                fix = (f"convert the column: df[{str(c)!r}].astype('uint64') when every "
                       f"value is in 0..2**64-1, else store them as text (df[{str(c)!r}]"
                       ".astype(str))") if not depth else (  # lists: QA recsys63, review63b
                    f"declare its integers unsigned when every value is in 0..2**64-1: schema="
                    f"pa.schema([({str(c)!r}, {'pa.list_(' * depth}pa.uint64(){')' * depth})])")
                raise SchemaError(f"column {str(c)!r}: a Python int beyond the range of int64 "
                                  f"({why}); {fix}") from e
            except refused as why:
                raise SchemaError(_refusal(df[c], str(c), why)) from e
        raise


def _depth(col: Any) -> int:
    """How deep the first value holding a number lies in a column's lists (0: no lists)."""
    seqs = (list, tuple, np.ndarray)
    best = 0
    for v in col:
        depth = 0
        while isinstance(v, seqs):
            v = next((x for x in v if not _missing(x)), None)
            depth += 1
        if not _missing(v):
            return depth
        best = max(best, depth)
    return best


def _refusal(col: Any, name: str, why: Exception) -> str:
    bad = next((v for v in col if not _missing(v) and _refused(v)), None)
    cell = "" if bad is None else f"value {shown(bad)} "
    pairs = isinstance(bad, list) and bool(bad) and all(
        isinstance(p, tuple) and len(p) == 2 for p in bad)
    hint = (f"; a map column's cells as pyarrow's to_pandas() gives them (lists of (key, "
            f"value) tuples) need their type: convert the DataFrame yourself, e.g. "
            f"pa.Table.from_pandas(df, schema=pa.schema([..., ({name!r}, pa.map_(pa.string(), "
            f"pa.int64()))]), preserve_index=False), and commit that table, or make the "
            f"cells dicts ({{'x': 1}})" if pairs else "")
    if isinstance(bad, np.ndarray) and bad.ndim > 1:  # (QA graphs65: JSON text was the advice)
        from dload_arrow.store.pair_checks import rows_type_text

        return (f"column {name!r}: arrays of {bad.ndim} dimensions and several shapes (value "
                f"{shown(bad)}) make no tensor column; store them as rows of rows: schema= "
                f"with {name!r} as {rows_type_text(bad)}")
    return (f"column {name!r}: {cell}is not a value Arrow can store "
            f"({why.args[0] if why.args else why}); make it one (dict keys must be str, the "
            f"items of a list of one type), or store it as JSON text "
            f"(df[{name!r}].map(json.dumps)){hint}")


def _refused(v: Any) -> bool:
    try:
        pa.array([v])
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError):
        return True
    return False
