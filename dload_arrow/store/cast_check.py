"""Find a value that a cast of an appended column, or Arrow's conversion of sample dicts,
would store changed.

An appended table (or a table committed with ``schema=``) has each column cast to the stored
type with Arrow's safe cast, which refuses overflow and truncated fractions but still turns
2 and -1 into ``True`` in a bool column, drops a timestamp's time of day in a date column,
rounds 1.25 to 1.2 in a ``decimal128(5, 1)`` and 10**30 + 1 to 1e30 in a double. The check
casts the result back to the input's type and compares: a value is accepted only when it
comes back as it was (NaN as NaN). Narrowing one float type to another is the exception: its
rounding is what a float32 column means, and :func:`~dload_arrow.store.lossless.overflow_row`
refuses the values it would make inf or 0. A struct field the output type lacks is dropped
by the cast, so every value in which it is not null counts as changed. Likewise a sample's
dict with a key that is no field of its struct type: Arrow ignores the key
(:func:`extra_field_check`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["FieldCheck", "changed_row", "extra_field_check", "failing_row"]

_LISTS = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)


def changed_row(src: pa.Array, out: pa.Array) -> int | None:
    """The first row of ``src`` whose value ``out`` (its cast) does not hold, or None."""
    flags = _changed(src, out)
    if flags is None:
        return None
    rows = np.flatnonzero(flags)
    return int(rows[0]) if len(rows) else None


def _is_list(t: pa.DataType) -> bool:
    return any(f(t) for f in _LISTS)


def _changed(src: pa.Array, out: pa.Array) -> np.ndarray | None:
    """Per row of ``src``: whether its value changed in ``out`` (None: nothing changed, or
    nothing this check can compare)."""
    if pa.types.is_dictionary(src.type):
        src = src.dictionary_decode()
    if pa.types.is_dictionary(out.type):
        out = out.dictionary_decode()
    st, ot = src.type, out.type
    if st == ot:
        return None
    if _is_list(st) and _is_list(ot):
        inner = _changed(src.flatten(), out.flatten())
        if inner is None:
            return None
        # the row of each flattened value: flatten() skips null lists, whatever values a
        # writer (polars) left behind them, so the lengths count 0 there
        lengths = pc.fill_null(pc.list_value_length(src), 0).to_numpy(zero_copy_only=False)
        rows = np.zeros(len(src), dtype=bool)
        rows[np.repeat(np.arange(len(src)), lengths)[inner]] = True
        return rows
    if pa.types.is_struct(st) and pa.types.is_struct(ot):
        return _struct_changed(src, out)
    if pa.types.is_floating(st) and pa.types.is_floating(ot) and ot.bit_width < st.bit_width:
        return None
    if pa.types.is_floating(st) and pa.types.is_decimal(ot):
        # by the float's shortest text (863.18), not a cast back: Arrow's decimal -> double
        # is off by one unit in the last place for 14% of prices with two decimals
        pairs = zip(src.to_pylist(), out.to_pylist(), strict=True)
        return np.array([a is not None and b is not None and Decimal(repr(a)) != b
                         for a, b in pairs], dtype=bool)
    try:
        back = out.cast(st, safe=False)
        same = pc.equal(src, back)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None  # no way back to compare: Arrow's safe cast is all there is
    if pa.types.is_floating(st):
        same = pc.or_kleene(same, pc.and_(pc.is_nan(src), pc.is_nan(back)))
    return np.asarray(pc.invert(pc.fill_null(same, True)).to_numpy(zero_copy_only=False))


def _struct_changed(src: pa.StructArray, out: pa.StructArray) -> np.ndarray | None:
    rows = np.zeros(len(src), dtype=bool)
    found = False
    for j, field in enumerate(src.type):
        if out.type.get_field_index(field.name) < 0:  # dropped by the cast: its values lost
            rows |= np.asarray(src.field(j).is_valid().to_numpy(zero_copy_only=False))
            found = True
    for i, field in enumerate(out.type):
        j = src.type.get_field_index(field.name)
        if j < 0:
            continue  # a field the input lacks is null in every row
        inner = _changed(src.field(j), out.field(i))
        if inner is not None:
            rows |= inner
            found = True
    if not found:
        return None
    return rows & np.asarray(src.is_valid().to_numpy(zero_copy_only=False))


# values -> the path (".b", "[].b") of a field their type lacks in one of them, or None
FieldCheck = Callable[[list[Any]], "str | None"]


def extra_field_check(t: pa.DataType) -> FieldCheck | None:
    """A check of values of type ``t`` for a dict key that is no field of a struct in ``t``
    (Arrow ignores such keys), or None when ``t`` holds no struct. It looks at each distinct
    tuple of keys once, and at nested values a level at a time, all values together."""
    if pa.types.is_struct(t):
        names = frozenset(t.names)
        inner = [(f.name, c) for f in t if (c := extra_field_check(f.type)) is not None]

        def struct(vs: list[Any]) -> str | None:
            # a tuple has no names: pyarrow refuses one of the wrong length
            dicts = [v for v in vs if type(v) is dict or isinstance(v, Mapping)]
            for keys in {tuple(v) for v in dicts}:
                if not names.issuperset(keys):
                    return f".{next(k for k in keys if k not in names)}"
            for n, c in inner:
                if (p := c([v.get(n) for v in dicts])) is not None:
                    return f".{n}{p}"
            return None
        return struct
    if pa.types.is_map(t):
        each = extra_field_check(t.item_type)
        if each is None:
            return None
        return lambda vs: _under(each, [x for v in vs for x in _map_values(v)])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        elem = extra_field_check(t.value_type)
        if elem is None:
            return None
        return lambda vs: _under(elem, [x for v in vs if isinstance(v, (list, tuple, np.ndarray))
                                        for x in v])
    return None


def _under(check: FieldCheck, items: list[Any]) -> str | None:
    """The path ``check`` finds in the items of lists or values of maps, under ``[]``."""
    p = check(items)
    return None if p is None else f"[]{p}"


def _map_values(v: Any) -> Any:
    """The values of a map cell: a dict, or a list of (key, value) pairs."""
    if isinstance(v, Mapping):
        return v.values()
    if isinstance(v, list):
        return [x[1] for x in v if isinstance(x, tuple) and len(x) == 2]
    return ()


def failing_row(col: pa.Array, want: pa.DataType) -> int | None:
    """The first row whose cast to ``want`` fails, found by halving (a decimal's rescale or
    precision refusal named no value: QA dtypes66); None for a flat column that casts whole
    in halves (the failure is not one row's) or a nested one."""
    if col.type.num_fields or len(col) == 0:
        return None
    lo, hi = 0, len(col)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            col.slice(lo, mid - lo).cast(want)
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
    try:
        col.slice(lo, 1).cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return lo
    return None
