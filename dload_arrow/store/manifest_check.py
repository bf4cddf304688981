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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import numpy_values
from dload_arrow.errors import IntegrityError, InvalidNameError, shown
from dload_arrow.store.names import check_digest, check_name

__all__ = ["FORMAT_VERSION", "KEY_INDEX_PARTS_FORMAT", "TENSOR_BYTES_FORMAT", "check_manifest"]

FORMAT_VERSION = 1
"""The format of every manifest whose key index is absent or one Parquet file (a dict)."""
KEY_INDEX_PARTS_FORMAT = 2
"""The format of a manifest whose key index is a list of parts (written only then: a
dload_arrow that reads format 1 refuses it with "upgrade" instead of misreading it)."""
TENSOR_BYTES_FORMAT = 3
"""The format of a manifest whose schema has tensors its shards may store as bytes
(store/tensor_layout.py), with either form of key index: a dload_arrow that reads only
formats 1 and 2 would misread those shards, so it refuses the manifest with "upgrade"."""
_FORMATS = (FORMAT_VERSION, KEY_INDEX_PARTS_FORMAT, TENSOR_BYTES_FORMAT)

_REQUIRED = ("digest", "bytes", "rows", "row_offset", "footer_offset", "rg_rows",
             "rg_offsets", "rg_bytes")
_COUNTS = ("rows", "bytes", "row_offset")
_ROW_GROUPS = ("rg_rows", "rg_offsets", "rg_bytes")


def check_manifest(info: Any, table: pa.Table) -> None:
    """Raise unless ``info`` (the JSON metadata) and ``table`` (the shard rows) are sound."""
    if not isinstance(info, dict):
        raise IntegrityError("manifest metadata is not a JSON object: corrupt, or not a "
                             "dload_arrow manifest")
    fmt = info.get("format")
    if isinstance(fmt, bool) or fmt not in _FORMATS:
        raise IntegrityError(
            f"manifest format {fmt!r} is not supported by this dload_arrow "
            f"(reads formats {', '.join(map(str, _FORMATS))}); upgrade dload-arrow to read it"
        )
    if not isinstance(info.get("schema"), str):
        raise IntegrityError("manifest has no sample schema: corrupt, or not a dload_arrow "
                             "manifest")
    _stored_name(info.get("name", ""), "names its dataset")
    _check_table(table)
    digests = table.column("digest")
    text = pa.types.is_string(digests.type) or pa.types.is_large_string(digests.type)
    if not (text and not digests.null_count and pc.all(pc.match_substring_regex(
            digests, r"\A[0-9a-f]{64}\z"), min_count=0).as_py()):  # one pass, not one a shard
        for d in digests.to_pylist():  # the first bad one, said as check_digest says it
            check_digest(d, "shard digest in manifest")
    _check_key_index(fmt, info.get("key_index"), table)
    parents = info.get("parents", [])
    if not isinstance(parents, list) or not all(isinstance(p, dict) for p in parents):
        raise IntegrityError(f"manifest parents {parents!r} are not a list of objects")
    for p in parents:
        _stored_name(p.get("name", ""), "names a parent dataset")
        check_digest(p.get("version", ""), "parent version in manifest")


def _stored_name(name: Any, what: str) -> None:
    """A dataset name read from a manifest: one no dataset can have is a corrupt or hostile
    manifest (said so, not as if the user had typed it)."""
    try:
        check_name(name)
    except InvalidNameError:
        raise InvalidNameError(
            f"the manifest {what} {shown(name)}, which no dataset can be called: the manifest "
            "is corrupt or hostile (written outside dload_arrow?) and is refused; remove that "
            "version, or restore the root from a copy"
        ) from None


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
    bad = _bad_row_groups(table, np.asarray(rows, dtype=np.int64))
    if bad is not None:
        raise IntegrityError(
            f"manifest shard {bad}'s row groups ({', '.join(_ROW_GROUPS)}) are not lists of "
            f"counts >= 0 of one length whose rows add up to its {rows[bad]} rows: the "
            "manifest is corrupt"
        )


def _bad_row_groups(table: pa.Table, rows: np.ndarray) -> int | None:
    """The first shard whose row-group lists are not counts >= 0 of one length adding up to
    its rows (vectorised: a manifest of 100k shards is read in milliseconds); -1 for a
    column of another type; None when all are sound."""
    lengths = []
    for name in _ROW_GROUPS:
        col = table.column(name).combine_chunks()
        if not (pa.types.is_list(col.type) and pa.types.is_integer(col.type.value_type)):
            return 0 if len(rows) else None
        values = pc.list_flatten(col)
        if col.null_count:
            return int(np.flatnonzero(numpy_values(col.is_null()))[0])
        if values.null_count:  # (no null list: values and parent indices align)
            inner = numpy_values(values.is_null())
            return int(numpy_values(pc.list_parent_indices(col))[inner][0])
        if len(values) and pc.min(values).as_py() < 0:
            negative = np.repeat(np.arange(len(col)), _lengths(col))[
                numpy_values(values) < 0]
            return int(negative[0])
        lengths.append(_lengths(col))
        if name == "rg_rows":
            ends = np.cumsum(lengths[-1])
            total = np.concatenate([[0], np.cumsum(numpy_values(values))])
            wrong = np.flatnonzero(total[ends] - total[ends - lengths[-1]] != rows)
            if len(wrong):
                return int(wrong[0])
    differ = np.flatnonzero((lengths[0] != lengths[1]) | (lengths[0] != lengths[2]))
    return int(differ[0]) if len(differ) else None


def _lengths(col: pa.Array) -> np.ndarray:
    return numpy_values(pc.list_value_length(col))  # (no null lists)


_PART_INTS = ("bytes", "rows", "footer_offset")
_PART_LISTS = {"rg_offsets": int, "rg_bytes": int, "rg_key_min": str, "rg_key_max": str}


def _check_key_index(fmt: int, idx: Any, table: pa.Table) -> None:
    """Format 1: no key index, or one part (an object); format 2: a list of two or more parts
    whose rows add up to the version's; format 3 either. Each part's digest and row-group
    layout is checked."""
    said = fmt  # format 3 takes either form: checked as the form it has, named as itself
    if fmt == TENSOR_BYTES_FORMAT:
        fmt = KEY_INDEX_PARTS_FORMAT if isinstance(idx, list) else FORMAT_VERSION
    if idx is None and fmt == FORMAT_VERSION:
        return
    if fmt == FORMAT_VERSION:
        if not isinstance(idx, dict):
            raise IntegrityError(f"manifest key index {shown(idx)} is not an object")
        _check_part(idx)
        return
    if not isinstance(idx, list) or len(idx) < 2 or not all(isinstance(p, dict) for p in idx):
        raise IntegrityError(f"manifest key index {shown(idx)} is not a list of two or more "
                             f"parts (objects), as format {said} requires")
    for part in idx:
        _check_part(part)
    if sum(p["rows"] for p in idx) != sum(table.column("rows").to_pylist()):
        raise IntegrityError("manifest key index parts do not add up to its rows: the manifest "
                             "is corrupt")


def _check_part(part: dict[str, Any]) -> None:
    check_digest(part.get("digest", ""), "key index digest in manifest")
    for k in _PART_INTS:
        v = part.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise IntegrityError(f"manifest key index {k!r} is {shown(v)}, not a count: the "
                                 "manifest is corrupt")
    lengths = set()
    for k, kind in _PART_LISTS.items():
        v = part.get(k)
        if not isinstance(v, list) or not all(
                isinstance(x, kind) and not isinstance(x, bool) for x in v):
            raise IntegrityError(f"manifest key index {k!r} is {shown(v)}, not a list of "
                                 f"{kind.__name__}: the manifest is corrupt")
        lengths.add(len(v))
    if len(lengths) != 1:
        raise IntegrityError("manifest key index row-group lists differ in length: the "
                             "manifest is corrupt")
