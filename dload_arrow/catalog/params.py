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

from dload_arrow.errors import SqlError

__all__ = ["bindable", "bindable_params", "per_statement"]


_FINE = ("ns", "ps", "fs", "as")


def bindable(value: Any) -> Any:
    """``value`` in a form DuckDB binds: numpy numbers and bools via ``.item()``, pyarrow
    scalars and arrays via ``.as_py()`` / ``.to_pylist()``; lists, tuples and dicts element
    by element. Anything else (numpy arrays, strings, times...) is returned as it is."""
    if isinstance(value, (np.number, np.bool_)) and not isinstance(value, np.timedelta64):
        return value.item()
    if isinstance(value, np.datetime64) and np.datetime_data(value.dtype)[0] in _FINE:
        # DuckDB binds a nanosecond datetime64 as its integer count: make it a TIMESTAMP
        micro = value.astype("datetime64[us]")
        if micro.astype(value.dtype) != value:
            raise _finer(np.datetime_as_string(value))
        return micro
    if isinstance(value, pa.Scalar):
        t = value.type
        if ((pa.types.is_timestamp(t) or pa.types.is_time64(t)) and t.unit == "ns"
                and value.is_valid and value.value % 1000):
            raise _finer(str(value))  # (as_py() would drop the nanoseconds)
        return value.as_py()
    if getattr(value, "nanosecond", 0):  # a pandas Timestamp: bound without them
        raise _finer(str(value))
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value.to_pylist()
    if isinstance(value, (list, tuple)):
        return [bindable(v) for v in value]
    if isinstance(value, dict):
        return {k: bindable(v) for k, v in value.items()}
    return value


def _finer(shown: str) -> SqlError:
    return SqlError(
        f"parameter {shown}: DuckDB binds times to the microsecond and this one has a finer "
        "part; pass it as text and cast it in the query, e.g. CAST($t AS TIMESTAMP_NS) with "
        "t=str(value)")


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
