"""What a manifest read from the root must hold before anything trusts it.

A manifest is the one file a reader believes about a version: which shards, how many rows,
where each row group starts. Bytes that hash to their name can still be hostile (written by
hand, by a buggy tool, or by a newer format), so each field the read path relies on is checked
here and a bad one is an ``IntegrityError`` (or ``InvalidNameError`` for a name or digest that
could escape the root), never a ``KeyError`` from deep inside a read.
"""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.errors import IntegrityError
from dload_arrow.store.names import check_digest, check_name

__all__ = ["FORMAT_VERSION", "check_manifest"]

FORMAT_VERSION = 1

_REQUIRED = ("digest", "bytes", "rows", "row_offset", "footer_offset", "rg_rows",
             "rg_offsets", "rg_bytes")
_COUNTS = ("rows", "bytes", "row_offset")


def check_manifest(info: Any, table: pa.Table) -> None:
    """Raise unless ``info`` (the JSON metadata) and ``table`` (the shard rows) are sound."""
    if not isinstance(info, dict):
        raise IntegrityError("manifest metadata is not a JSON object: corrupt, or not a "
                             "dload_arrow manifest")
    fmt = info.get("format")
    if fmt != FORMAT_VERSION:
        raise IntegrityError(
            f"manifest format {fmt!r} is not supported by this dload_arrow "
            f"(reads format {FORMAT_VERSION}); upgrade dload-arrow to read it"
        )
    if not isinstance(info.get("schema"), str):
        raise IntegrityError("manifest has no sample schema: corrupt, or not a dload_arrow "
                             "manifest")
    check_name(info.get("name", ""))
    _check_table(table)
    for d in table.column("digest").to_pylist():
        check_digest(d, "shard digest in manifest")
    idx = info.get("key_index")
    if idx is not None:
        if not isinstance(idx, dict):
            raise IntegrityError(f"manifest key index {idx!r} is not an object")
        check_digest(idx.get("digest", ""), "key index digest in manifest")
    parents = info.get("parents", [])
    if not isinstance(parents, list) or not all(isinstance(p, dict) for p in parents):
        raise IntegrityError(f"manifest parents {parents!r} are not a list of objects")
    for p in parents:
        check_name(p.get("name", ""))
        check_digest(p.get("version", ""), "parent version in manifest")


def _check_table(table: pa.Table) -> None:
    missing = [c for c in _REQUIRED if c not in table.column_names]
    if missing:
        raise IntegrityError(f"manifest lacks column(s) {missing}: corrupt, or not a "
                             "dload_arrow manifest")
    for c in _COUNTS:
        col = table.column(c)
        if not pa.types.is_integer(col.type) or col.null_count or (
                len(col) and pc.min(col).as_py() < 0):
            raise IntegrityError(f"manifest column {c!r} ({col.type}) holds nulls, negative "
                                 "counts or non-integers: the manifest is corrupt")
    rows = table.column("rows").to_pylist()
    offsets = table.column("row_offset").to_pylist()
    if offsets != [0, *itertools.accumulate(rows)][: len(rows)]:
        raise IntegrityError("manifest row offsets do not add up its shards' row counts: the "
                             "manifest is corrupt")
