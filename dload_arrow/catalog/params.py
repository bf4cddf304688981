"""Query parameters as DuckDB binds them: numpy and pyarrow scalars become Python values.

DuckDB's Python client binds Python scalars, lists, dicts and numpy arrays, but refuses a
numpy scalar (``np.int64(3)``, what indexing an array gives) and any pyarrow scalar or array
(``NotImplementedException: Unable to transform python value``). Those are what a user has
in hand after reading a table, so they are converted here, also inside lists and dicts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import SqlError

__all__ = ["bindable", "bindable_params", "given_params", "per_statement", "unused_params"]


_FINE = ("ns", "ps", "fs", "as")


def bindable(value: Any) -> Any:
    """``value`` in a form DuckDB binds: numpy numbers and bools via ``.item()``, pyarrow
    scalars and arrays via ``.as_py()`` / ``.to_pylist()``; lists, tuples and dicts element
    by element. Anything else (numpy arrays, strings, times...) is returned as it is. A time
    with a part finer than a microsecond (which DuckDB would bind cut, matching another row)
    is refused, saying how to compare it exactly."""
    if isinstance(value, (np.number, np.bool_)) and not isinstance(value, np.timedelta64):
        return value.item()
    if isinstance(value, np.ndarray) and value.dtype.kind == "M":  # DuckDB: BIGINT[] for ns
        value = pa.array(value)
    if isinstance(value, np.timedelta64):  # DuckDB binds none: a timedelta (an INTERVAL)
        if np.isnat(value):
            return None
        if np.datetime_data(value.dtype)[0] in ("Y", "M"):  # numpy makes a month 30.44 days
            raise SqlError(f"parameter {value}: months and years have no fixed length; pass "
                           "the text (t='1 month') and write CAST($t AS INTERVAL)")
        micro = value.astype("timedelta64[us]")
        if micro.astype(value.dtype) != value:
            raise _finer(f"{value}", "")
        return micro.item()
    if isinstance(value, np.datetime64) and np.datetime_data(value.dtype)[0] in _FINE:
        # DuckDB binds a nanosecond datetime64 as its integer count: make it a TIMESTAMP
        micro = value.astype("datetime64[us]")
        if not np.isnat(value) and micro.astype(value.dtype) != value:
            raise _finer(np.datetime_as_string(value), "TIMESTAMP_NS")
        return micro
    if isinstance(value, (pa.Scalar, pa.Array, pa.ChunkedArray)):
        if pa.types.is_dictionary(value.type):  # (bound as its values)
            value = value.value if isinstance(value, pa.Scalar) else value.cast(
                value.type.value_type)
        coarse = _micro(value.type)
        if coarse is not None:  # a safe cast fails where a value has a finer part
            try:
                value = value.cast(coarse)
            except pa.ArrowInvalid:
                raise _finer(_shown(value), _CASTS.get(_kind(value.type), "")) from None
        return value.as_py() if isinstance(value, pa.Scalar) else value.to_pylist()
    nanos = getattr(value, "nanosecond", getattr(value, "nanoseconds", 0))  # pandas' own
    if isinstance(nanos, int) and nanos:  # (pd.NaT's is NaN: bound as NULL)
        kind = "duration" if hasattr(value, "nanoseconds") else (
            "zoned" if getattr(value, "tzinfo", None) is not None else "timestamp")
        raise _finer(str(value), _CASTS.get(kind, ""))
    if isinstance(value, (list, tuple)):
        return [bindable(v) for v in value]
    if isinstance(value, dict):
        return {k: bindable(v) for k, v in value.items()}
    return value


_CASTS = {"timestamp": "TIMESTAMP_NS", "zoned": "TIMESTAMPTZ_NS", "time": "TIME_NS"}


def _times(t: pa.DataType) -> list[pa.DataType]:
    """The nanosecond time types ``t`` is or holds (in lists, structs, maps, dictionaries)."""
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return [t] if t.unit == "ns" else []
    if pa.types.is_dictionary(t):
        return _times(t.value_type)
    return [x for i in range(t.num_fields) for x in _times(t.field(i).type)]


def _kind(t: pa.DataType) -> str:
    """The kind of the first nanosecond time ``t`` holds."""
    t = _times(t)[0]
    if pa.types.is_timestamp(t):
        return "zoned" if t.tz is not None else "timestamp"
    return "time" if pa.types.is_time(t) else "duration"


def _micro(t: pa.DataType) -> pa.DataType | None:
    """``t`` with nanoseconds made microseconds (nested too; a dictionary decoded), or None
    when it holds none."""
    if not _times(t):
        return None
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_time64(t):
        return pa.time64("us")
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_dictionary(t):
        return _micro(t.value_type)
    if pa.types.is_map(t):
        return pa.map_(_micro(t.key_type) or t.key_type, _micro(t.item_type) or t.item_type)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_micro(f.type) or f.type) for f in t])
    inner = _micro(t.value_type)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(inner, t.list_size)
    return pa.large_list(inner) if pa.types.is_large_list(t) else pa.list_(inner)


def _shown(value: Any) -> str:
    """The first value with a finer part, as text with its nanoseconds (``str`` of a time
    scalar drops them); a nested value as it prints."""
    flat = pa.array([value], value.type) if isinstance(value, pa.Scalar) else value
    if _times(flat.type) != [flat.type]:
        return str(flat.to_pylist()[:3])[:300]  # (pandas Timestamps keep the nanoseconds)
    micro = pc.cast(flat, _micro(flat.type), safe=False)
    cut = flat.filter(pc.not_equal(pc.cast(micro, flat.type), flat))
    if pa.types.is_duration(cut.type):
        return f"{cut.cast(pa.int64())[0].as_py()} ns"
    return str(cut.cast(pa.string())[0].as_py())


def _finer(shown: Any, cast: str) -> SqlError:
    how = (f"pass it as text and cast it in the query, e.g. CAST($t AS {cast}) with t its text"
           if cast else "DuckDB's INTERVAL holds microseconds; pass the count of "
           "nanoseconds as an integer and compare with one")
    return SqlError(f"parameter {shown}: DuckDB binds times to the microsecond and this one "
                    f"has a finer part; {how}")


def bindable_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``params`` with every value made :func:`bindable`."""
    return {k: bindable(v) for k, v in (params or {}).items()}


def per_statement(statements: list[Any], params: dict[str, Any]) -> list[dict[str, Any]]:
    """The parameters each of DuckDB's ``statements`` names, in order.

    DuckDB binds parameters to the last statement of a multi-statement query only, so one
    with ``samples()`` (its file list is a parameter) or a ``$name`` before the last would
    fail; each statement is run with its own. A parameter no statement names goes to the
    last, where DuckDB reports it as it does for a single statement.
    """
    used = {k for s in statements for k in s.named_parameters}
    out = [{k: params[k] for k in s.named_parameters if k in params} for s in statements]
    out[-1].update({k: v for k, v in params.items() if k not in used})
    return out


def given_params(params: dict[str, Any]) -> list[str]:
    """The names of the parameters a user gave (not dload's own ``__dload_...`` ones)."""
    return sorted(k for k in params if not k.startswith("__"))


def unused_params(error: str, statements: list[Any], params: dict[str, Any]) -> SqlError | None:
    """The error for parameters no statement names (DuckDB: "Parameter/argument count
    mismatch"; QA eng58), or None."""
    named = {k.lower() for s in statements for k in s.named_parameters}  # $N is $n
    unused = [k for k in given_params(params) if k.lower() not in named]
    if "count mismatch" not in error or not unused:
        return None
    return SqlError(f"parameter(s) {unused} given, but the query names no "
                    f"{', '.join('$' + k for k in unused)}: write it where the value goes "
                    "(... = $name), or leave the parameter out")
