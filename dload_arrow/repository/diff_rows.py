"""What ``Repository.diff`` reads: the keys of shards, hashes of rows, columns compared.

Only shards that are not shared by both versions are read: a shard is content-addressed, so a
shared one holds the same rows in both.
"""

from __future__ import annotations

import decimal
import hashlib
from typing import TYPE_CHECKING, Any

from dload_arrow.store.names import KEY_COLUMN, shard_path

if TYPE_CHECKING:
    import pyarrow as pa

    from dload_arrow.storage import Storage

__all__ = ["column_changes", "row_hashes", "shard_keys"]


def _shard(storage: Storage, digest: str, columns: list[str]) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = shard_path(digest)
    local = storage.local_path(path)
    src = local if local else pa.py_buffer(storage.read(path))
    with pq.ParquetFile(src) as pf:  # read_table would import pyarrow.dataset and pandas
        return pf.read(columns=columns)


def shard_keys(storage: Storage, digest: str) -> set[str]:
    """The keys of one shard (its key column only is read)."""
    return set(_shard(storage, digest, [KEY_COLUMN]).column(0).to_pylist())


def row_hashes(storage: Storage, digests: list[str], keys: set[str], columns: list[str]
               ) -> dict[str, bytes]:
    """A hash of each row's ``columns`` values, for the rows of ``keys`` in those shards (one
    shard read whole at a time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(sorted(keys), pa.string())
    out: dict[str, bytes] = {}
    for d in digests:
        t = _shard(storage, d, [KEY_COLUMN, *columns])
        keys_of = t.column(KEY_COLUMN)
        t = t.filter(pc.is_in(keys_of, value_set=wanted.cast(keys_of.type)))
        for row in t.to_pylist():
            key = row.pop(KEY_COLUMN)
            out[key] = hashlib.sha256(repr(_canon(sorted(row.items()))).encode()).digest()
    return out


def _canon(v: Any) -> Any:
    """``v`` with numbers compared by value: a column widened from int to float (1 -> 1.0)
    changes its type (shown under columns), not its rows' values (QA review58b)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, decimal.Decimal) and v.is_finite():  # int -> decimal too (1 == 1.00)
        return int(v) if v == v.to_integral_value() else (
            float(v) if decimal.Decimal(float(v)) == v else v.normalize())
    if isinstance(v, list | tuple):
        return [_canon(x) for x in v]
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    return v


def column_changes(a: pa.Schema, b: pa.Schema) -> dict[str, list[Any]]:
    """Columns added, removed and retyped from schema ``a`` to ``b`` (their order aside)."""
    from dload_arrow.store.rows import field_shape

    def shown(f: Any) -> str:  # a tensor's shape too: (2, 3) and (3, 2) share their type
        shape = field_shape(f)
        return str(f.type) + ("" if shape is None else f" {shape}")

    old, new = {f.name: shown(f) for f in a}, {f.name: shown(f) for f in b}
    return {"added": [n for n in new if n not in old],
            "removed": [n for n in old if n not in new],
            "changed": [{"name": n, "old": old[n], "new": new[n]}
                        for n in new if n in old and new[n] != old[n]]}
