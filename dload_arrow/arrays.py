"""Arrow arrays built from numpy buffers, without ``pa.array``.

``pa.array`` imports pandas on its first call in a process whenever pandas is installed (it
checks whether its argument is a pandas object): 0.3-0.45 s and 50 MB, paid by the first
shuffled batch of every process and DataLoader worker, though reads never need pandas. The
read and pipeline layers build index, mask and probe arrays with these helpers, and read
numbers into numpy with :func:`numpy_values` (``Array.to_numpy`` imports pandas too);
tests/test_no_pandas.py checks that reads leave pandas unimported. :func:`typed_array` does
the same for the write path's columns of Python values (manifest rows, ingested files)."""

from __future__ import annotations

import datetime as dt
import sys
import zoneinfo
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["binary_array", "bool_array", "inferred_type", "int64_array", "list_slots",
           "numpy_values", "pylist", "scalar", "string_array", "typed_array"]


def int64_array(values: Any) -> pa.Array:
    """An int64 Arrow array (no nulls) over ``values``, a copy only if they are not int64."""
    data = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def bool_array(mask: Any) -> pa.Array:
    """A boolean Arrow array (no nulls) from a numpy-like mask."""
    bits = np.asarray(mask, dtype=bool).reshape(-1)
    packed = np.packbits(bits, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(bits), [None, pa.py_buffer(packed)])


def binary_array(values: Sequence[bytes]) -> pa.Array:
    """A binary Arrow array (no nulls) of ``values``."""
    lengths = np.fromiter((len(v) for v in values), np.int64, len(values))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    data = pa.py_buffer(b"".join(values))
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets), data])


def string_array(values: Sequence[str]) -> pa.Array:
    """A string Arrow array (no nulls) of ``values`` (UTF-8 encoded here, so always valid)."""
    return binary_array([v.encode() for v in values]).view(pa.string())


def scalar(value: Any) -> pa.Scalar:
    """``value`` (None, bool, int, float, str, bytes or datetime) as an Arrow scalar of the
    type ``pa.scalar`` infers (None: a null boolean; an int from 2**63 to 2**64 - 1: uint64,
    where ``pa.scalar`` fails); other values go through ``pa.scalar``."""
    if value is None:
        return pa.nulls(1, pa.bool_())[0]
    if isinstance(value, bool):
        return bool_array([value])[0]
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return int64_array([value])[0]
    if isinstance(value, int) and 2**63 <= value < 2**64:  # pa.scalar fails: not an int64
        data = np.asarray([value], np.uint64)
        return pa.Array.from_buffers(pa.uint64(), 1, [None, pa.py_buffer(data)])[0]
    if isinstance(value, float):
        data = np.asarray([value], np.float64)
        return pa.Array.from_buffers(pa.float64(), 1, [None, pa.py_buffer(data)])[0]
    if isinstance(value, str):
        return string_array([value])[0]
    if isinstance(value, bytes):
        return binary_array([value])[0]
    if isinstance(value, dt.datetime):
        stamp = _timestamp(value)
        if stamp is not None:
            return stamp
    return pa.scalar(value)


_EPOCH = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)
_MINUTE = dt.timedelta(minutes=1)


def _timestamp(value: dt.datetime) -> pa.Scalar | None:
    """``pa.scalar(value)`` for a datetime: microseconds, the zone named as Arrow names it
    (None for a zone without a name)."""
    zone = value.tzinfo
    if zone is None:
        micros = (value - _EPOCH) // _US
        return int64_array([micros]).cast(pa.timestamp("us"))[0]
    if isinstance(zone, zoneinfo.ZoneInfo):
        name = zone.key
    elif zone is dt.UTC:
        name = "UTC"
    elif isinstance(zone, dt.timezone) and not zone.utcoffset(None) % _MINUTE:
        offset = zone.utcoffset(None)
        sign, minutes = ("-" if offset < dt.timedelta(0) else "+"), abs(offset) // _MINUTE
        name = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    else:
        return None
    micros = (value - _EPOCH.replace(tzinfo=dt.UTC)) // _US
    return int64_array([micros]).cast(pa.timestamp("us", tz=name))[0]


def numpy_values(arr: pa.Array) -> np.ndarray:
    """The values of a numeric or boolean array as numpy.

    Integers and floats without nulls are a read-only view of the Arrow buffer (zero-copy);
    booleans are unpacked (one copy). Anything else goes through ``Array.to_numpy``.
    """
    t = arr.type
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        dtype = np.dtype(t.to_pandas_dtype())
        return np.frombuffer(arr.buffers()[1], dtype, len(arr), arr.offset * dtype.itemsize)
    if arr.null_count == 0 and pa.types.is_boolean(t):
        bits = np.frombuffer(arr.buffers()[1], np.uint8)
        end = arr.offset + len(arr)
        return np.unpackbits(bits, count=end, bitorder="little")[arr.offset:].astype(bool)
    out: np.ndarray = arr.to_numpy(zero_copy_only=False)
    return out


def list_slots(arr: pa.Array, present: np.ndarray | None = None
               ) -> tuple[pa.Array, np.ndarray] | None:
    """The values of a fixed-size list array, null rows' slots included, and which of them
    belong to present rows (``present``: the rows that count, default the non-null ones);
    None when a present row holds a missing value (it has no dense form)."""
    size = arr.type.list_size
    if present is None:
        present = ~numpy_values(arr.is_null()) if arr.null_count else np.ones(len(arr), bool)
    slots = arr.values.slice(arr.offset * size, len(arr) * size)
    inside = np.repeat(present, size)
    if slots.null_count and bool((numpy_values(slots.is_null()) & inside).any()):
        return None
    return slots, inside


# Python types that a column of these Arrow types is built from without pa.array
_EXACT: dict[Any, type] = {pa.string(): str, pa.binary(): bytes, pa.bool_(): bool,
                           pa.float64(): float, pa.float32(): float}


def typed_array(values: Sequence[Any], t: pa.DataType) -> pa.Array:
    """``values`` (Python objects, None for null) as an Arrow array of type ``t``.

    Strings, binary, integers, floats, booleans and lists of them (no null lists) are built
    from buffers when every value has exactly the matching Python type; anything else (and
    any value ``pa.array`` would convert or refuse) goes through ``pa.array``, which gives
    the same array or the same error. Building from buffers costs about 0.3 us a small value
    more than ``pa.array``, so it is worth it only while the values are few: after
    :data:`BUFFER_VALUES` values in a process (about 60 ms more in all, against 0.3-0.45 s
    for the import), or once pandas is imported anyway, ``pa.array`` builds every column."""
    if _budget[0] > 0 and "pandas" not in sys.modules:
        cost = _value_count(values, t)
        if cost <= _budget[0]:
            built = _from_buffers(values, t)
            if built is not None:
                _budget[0] -= cost
                return built
    return pa.array(values, type=t)


def _value_count(values: Sequence[Any], t: pa.DataType) -> int:
    """The Python values ``values`` holds, its lists' too (2,048 tokens cost 2,048)."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return len(values)
    return len(values) + sum(len(v) for v in values if isinstance(v, list))


# Values typed_array builds from buffers in a process before it leaves them to pa.array.
BUFFER_VALUES = 200_000
_budget = [BUFFER_VALUES]


def inferred_type(values: Sequence[Any]) -> pa.DataType:
    """The type ``pa.array(values)`` infers, or its error (fast for str, bytes, bool, float,
    int64 ints); null or the first's type where the caller's check names the value at fault."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {int} and all(v is None or -(2**63) <= v < 2**63 for v in values):
        return pa.int64()
    if len(kinds) == 1 and (kind := next(iter(kinds))) in _INFERRED:
        return _INFERRED[kind]
    try:
        t = pa.array(values).type
        # pandas' Timestamps of unit ns make it ns if every time fits (1678-2261; QA review64c)
        if (pa.types.is_timestamp(t) and t.unit == "us"
                and any(getattr(v, "unit", None) == "ns" for v in values)
                and all(v is None or v != v or 1678 <= getattr(v, "year", 0) <= 2261
                        for v in values)):  # (None, NaT: no time; np.datetime64: no year)
            t = pa.timestamp("ns", t.tz)
        return t
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        try:
            first = pa.array([next(v for v in values if v is not None)]).type
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return pa.null()
        except OverflowError:  # [2**63, 0.0]: pa.array's error, as it gives it
            raise e from None
        if isinstance(e, pa.ArrowNotImplementedError):  # e.g. datetime and datetime64
            return first
        raise


_INFERRED = {str: pa.string(), bytes: pa.binary(), bool: pa.bool_(), float: pa.float64()}


def _fixed_lists(values: Sequence[Any], t: pa.FixedSizeListType) -> pa.Array | None:
    """Fixed-size lists from flat numpy arrays of exactly the value type (no nulls)."""
    if not pa.types.is_integer(t.value_type) and not pa.types.is_floating(t.value_type):
        return None
    dtype = np.dtype(t.value_type.to_pandas_dtype())
    if not values or any(type(v) is not np.ndarray or v.dtype != dtype or v.ndim != 1
                         or v.size != t.list_size for v in values):
        return None
    flat = np.ascontiguousarray(np.concatenate(values))
    child = pa.Array.from_buffers(t.value_type, len(flat), [None, pa.py_buffer(flat)])
    return pa.FixedSizeListArray.from_arrays(child, type=t)


def _validity(values: Sequence[Any]) -> tuple[pa.Buffer | None, int, np.ndarray]:
    valid = np.fromiter((v is not None for v in values), bool, len(values))
    nulls = len(values) - int(np.count_nonzero(valid))
    bits = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return bits, nulls, valid


def _from_buffers(values: Sequence[Any], t: pa.DataType) -> pa.Array | None:
    n = len(values)
    if pa.types.is_fixed_size_list(t):
        return _fixed_lists(values, t)
    present = [v for v in values if v is not None]
    if pa.types.is_list(t):
        if len(present) < n or any(type(v) is not list for v in present):
            return None
        child = _from_buffers([x for v in values for x in v], t.value_type)
        if child is None:
            return None
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum([len(v) for v in values], out=offsets[1:])
        if offsets[-1] >= 2**31:  # beyond 32-bit list offsets: pa.array decides
            return None
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(offsets.astype(np.int32))],
                                     children=[child])
    ticks = pa.types.is_timestamp(t) or pa.types.is_duration(t)  # int64 ticks of a unit
    want = int if pa.types.is_integer(t) or ticks else _EXACT.get(t)
    if want is None or any(type(v) is not want for v in present):
        return None
    bits, nulls, valid = _validity(values)
    if want is str or want is bytes:
        raw = [b"" if v is None else (v.encode() if want is str else v) for v in values]
        if sum(len(r) for r in raw) >= 2**31:
            return None
        data = binary_array(raw)
        return pa.Array.from_buffers(t, n, [bits, *data.buffers()[1:]], null_count=nulls)
    if want is bool:
        packed = pa.py_buffer(np.packbits(np.fromiter((bool(v) for v in values), bool, n),
                                          bitorder="little"))
        return pa.Array.from_buffers(t, n, [bits, packed], null_count=nulls)
    dtype = np.dtype(np.int64 if ticks else t.to_pandas_dtype())
    try:
        with np.errstate(over="ignore"):  # a float beyond float32 becomes inf, as in pa.array
            data = np.fromiter((0 if v is None else v for v in values), dtype, n)
    except OverflowError:  # out of the type's range: pa.array raises the proper error
        return None
    if want is int and valid.any() and not _fits(values, data):
        return None
    return pa.Array.from_buffers(t, n, [bits, pa.py_buffer(data)], null_count=nulls)


def _fits(values: Sequence[Any], data: np.ndarray) -> bool:
    """Whether numpy kept every integer (it wraps some out-of-range values silently)."""
    return all(v is None or int(d) == v for v, d in zip(values, data.tolist(), strict=True))


def _zoned(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) and t.tz is not None


def pylist(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """``column.to_pylist()``, without pandas for time zone-aware timestamps.

    Arrow converts those through pandas (0.3-0.8 s for ``dload log``); here the instants are
    read as UTC and converted with the column's zone, as Arrow does (a nanosecond column is
    left to Arrow). Lists of them (a manifest's row-group statistics) too."""
    t = column.type
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and _zoned(t.value_type):
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        values, at, out = pylist(column.flatten()), 0, []
        for n in column.value_lengths().to_pylist():  # lists of a manifest's statistics
            out.append(None if n is None else values[at:at + n])
            at += n or 0
        return out
    if not _zoned(t) or t.unit == "ns":
        return column.to_pylist()
    zone = pa.lib.string_to_tzinfo(t.tz)
    utc = column.cast(pa.timestamp(t.unit)).to_pylist()
    return [None if v is None else v.replace(tzinfo=dt.UTC).astimezone(zone)
            for v in utc]

