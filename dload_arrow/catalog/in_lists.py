"""``x IN (v1, ..., vn)`` as one set lookup instead of n equalities ORed together.

An OR of n equalities costs n compute kernels per batch (and n statistics tests per row
group): 1,000 keys over 300 row groups took 25 s. Here the literals are normalised once to
the values a row of the column can equal, as the equalities compare them
(as :mod:`dload_arrow.catalog.masks` does for an integer column: ``2.0`` is ``2``, ``1.5``
and out-of-range values never match), and the test becomes ``pc.is_in`` / ``pl.is_in``
over that set, with SQL's NULL rules kept:

- ``NULL IN (...)`` is NULL (``is_in`` alone says false);
- a NULL literal makes a row that matches no value NULL rather than false;
- NOT IN negates that (NULL stays NULL).

Float columns compare as float64 (how Arrow compares a float32 column with a float
literal); NaN matches nothing, and -0.0 equals 0.0. Column types other than integers,
floats, strings and bools (times, decimals) return None, and callers keep the OR of
equalities for them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dload_arrow.arrays import typed_array
from dload_arrow.catalog.predicate import In

__all__ = ["ValueSet", "value_set"]

_EXACT_FLOAT = 2**24  # integers up to here are exact in float32 (and float64)


@dataclass(frozen=True)
class ValueSet:
    """The non-null values of an IN list a row may equal, sorted, and whether it has NULL.

    Attributes:
        values: distinct values in ascending order (for pruning by bisection).
        has_null: the list holds a NULL literal.
        type: the Arrow type to compare as; ``float64`` for every float column.
    """

    values: tuple[Any, ...]
    has_null: bool
    type: pa.DataType

    @functools.cached_property
    def array(self) -> pa.Array:
        """The values as an Arrow array of :attr:`type` (the ``value_set`` of ``pc.is_in``).

        A float zero is listed with both signs: ``is_in`` hashes -0.0 apart from 0.0, which
        are equal as numbers (and in the set above, which keeps one of them).
        """
        values = list(self.values)
        if pa.types.is_floating(self.type) and 0.0 in values:
            values = [v for v in values if v != 0.0] + [-0.0, 0.0]
        return typed_array(values, self.type)


@functools.lru_cache(maxsize=64)
def value_set(node: In, typ: pa.DataType) -> ValueSet | None:
    """The :class:`ValueSet` of ``node`` against a column compared as ``typ``
    (:func:`~dload_arrow.catalog.masks.compared_type`), or None where the OR of equalities
    must decide (a type or a literal this module does not normalise)."""
    values = [v.value for v in node.values]
    has_null = any(v is None for v in values)
    given = [v for v in values if v is not None]
    kept: list[Any] | None
    if pa.types.is_integer(typ):
        kept, typ = _integers(given, typ), typ
    elif pa.types.is_floating(typ):
        kept, typ = _floats(given), pa.float64()
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        kept = given if all(isinstance(v, str) for v in given) else None
    elif pa.types.is_boolean(typ):
        kept = given if all(isinstance(v, bool) for v in given) else None
    else:
        return None
    if kept is None:
        return None
    return ValueSet(tuple(sorted(set(kept))), has_null, typ)


def _integers(given: list[Any], typ: pa.DataType) -> list[int] | None:
    bits = typ.bit_width
    lo, hi = (0, 2**bits - 1) if pa.types.is_unsigned_integer(typ) else (
        -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    out = []
    for v in given:
        if isinstance(v, float):
            if not math.isfinite(v) or not v.is_integer():
                continue  # an integer never equals NaN, an infinity or a fraction
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        if lo <= v <= hi:  # a value outside the type's range equals no row
            out.append(v)
    return out


def _floats(given: list[Any]) -> list[float] | None:
    out = []
    for v in given:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if isinstance(v, int) and abs(v) > _EXACT_FLOAT:
            return None  # Arrow casts it to the column's type, or refuses: let it decide
        if not math.isnan(v):  # NaN equals nothing
            out.append(float(v))
    return out
