"""The key index of a version whose keys are not globally sorted, in parts.

A part is a Parquet object under ``shards/`` (content addressed like a shard) with ``__key__``
sorted and ``row`` the global row number, for one contiguous range of the version's rows. The
manifest lists the parts in row order (``Manifest.key_index_parts``): one part is stored as an
object (manifest format 1, as before parts existed), several as a list (format 2).

**Writing.** A first commit of unsorted keys, and an append that makes sorted keys unsorted,
write one part over every row. An append onto a version that has an index writes one part
for its own rows only and lists the parent's parts before it: its cost no longer grows with
the dataset (a full index of 2M keys is ~11 MB, rewritten by every append before parts).

**Merging.** A version has at most :data:`MAX_PARTS` parts, so a lookup reads at most that
many index row groups. The append that would add one more merges instead: its rows and those
of every part after the first become one part (the first, usually the big initial index, is
kept); when those would hold at least as many rows as the first part, everything is merged
into one part. A merge reads the stored keys of the rows it covers (the data shards' key
columns), so it costs what a whole-index append cost before, once per ``MAX_PARTS - 1``
appends, and mostly over the small tail.

**Duplicate keys on append.** A stored key equal to a new key lies in a shard whose
``[key_min, key_max]`` holds the new key, so only those shards' keys are read
(:func:`overlapping_shards`): new keys outside every stored shard's range (appending after
the end, or a new prefix) read no stored keys at all.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import int64_array, numpy_values, scalar, string_array
from dload_arrow.errors import KeysStoredError, SchemaError
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import KEY_COLUMN
from dload_arrow.store.shard import ShardData, write_shards

__all__ = ["MAX_PARTS", "KeyReader", "build_part", "check_unique", "overlapping_shards",
           "memoized", "part_info", "plan_index", "stored_keys_from"]

MAX_PARTS = 8
"""Most parts a version's key index has; the append that would add one more merges."""

_INDEX_ROW_GROUP = 256 * 1024

KeyReader = Callable[[Manifest, Sequence[int]], pa.Array]
"""The stored keys of some shards of a version (their indexes), concatenated in order."""


def plan_index(parent: Manifest | None, new_rows: int) -> tuple[list[dict[str, Any]], int]:
    """(the parent's parts the new version keeps, the first row of the part it writes).

    The new part covers rows from there to the end (the parent's rows after that, then
    ``new_rows`` new ones). See the module docstring for the rule."""
    parts = [] if parent is None else parent.key_index_parts
    if not parts:
        return [], 0  # a first commit, or sorted keys until now: one part over every row
    if len(parts) < MAX_PARTS:
        return parts, parent.num_rows if parent is not None else 0
    first = int(parts[0]["rows"])
    total = (parent.num_rows if parent is not None else 0) + new_rows
    if total - first >= first:
        return [], 0
    return parts[:1], first


def memoized(read_keys: KeyReader) -> KeyReader:
    """``read_keys`` reading each shard once (the duplicate check and a new index part of one
    append can both need a shard's keys)."""
    seen: dict[tuple[str, int], pa.Array] = {}

    def read(m: Manifest, shards: Sequence[int]) -> pa.Array:
        missing = [i for i in shards if (m.version, i) not in seen]
        if missing:
            got, at = read_keys(m, missing), 0
            for i in missing:
                seen[m.version, i] = got.slice(at, m.shards[i].rows)
                at += m.shards[i].rows
        if not shards:
            return string_array([])
        return pa.concat_arrays([seen[m.version, i] for i in shards])

    return read


def stored_keys_from(parent: Manifest, read_keys: KeyReader, start: int) -> pa.Array | None:
    """The keys of ``parent``'s rows from ``start`` on, in row order (None: none)."""
    if start >= parent.num_rows:
        return None
    chosen = [s for s in parent.shards if s.row_offset + s.rows > start]
    keys = read_keys(parent, [s.index for s in chosen])
    return keys.slice(start - chosen[0].row_offset)


def build_part(keys: Sequence[pa.Array], first_row: int) -> ShardData:
    """The index part of rows ``first_row``, ``first_row + 1``, ... holding ``keys``."""
    allkeys = pa.chunked_array(list(keys), pa.string()).combine_chunks()
    order = pc.sort_indices(allkeys)
    rows = numpy_values(order).astype("int64")
    table = pa.table({KEY_COLUMN: allkeys.take(order),
                      "row": int64_array(rows + first_row if first_row else rows)})
    return next(iter(write_shards(
        table.to_batches(), table.schema, shard_size=2**62, row_group_size=_INDEX_ROW_GROUP
    )))


def part_info(part: ShardData) -> dict[str, Any]:
    """A part's entry in the manifest: digest, size, rows and row-group layout."""
    return {
        "digest": part.digest, "bytes": part.nbytes, "rows": part.rows,
        "footer_offset": part.footer_offset, "rg_rows": part.rg_rows,
        "rg_offsets": part.rg_offsets, "rg_bytes": part.rg_bytes,
        "rg_key_min": part.rg_key_min, "rg_key_max": part.rg_key_max,
    }


def overlapping_shards(parent: Manifest, keys: Sequence[pa.Array]) -> list[int]:
    """Indexes of ``parent``'s shards whose key range holds one of ``keys`` (the only ones
    that can hold a duplicate of one). A shard without a recorded range always counts."""
    if not keys or not parent.shards:
        return []
    new = pa.chunked_array(list(keys), pa.string())
    if len(new) == 0:
        return []
    lo, hi = pc.min(new).as_py(), pc.max(new).as_py()
    out: list[int] = []
    ordered: list[str] | None = None
    for s in parent.shards:
        if not isinstance(s.key_min, str) or not isinstance(s.key_max, str):
            out.append(s.index)
            continue
        if s.key_max < lo or s.key_min > hi:
            continue  # every new key is outside this shard's range
        if ordered is None:
            ordered = sorted(new.to_pylist())
        j = bisect.bisect_left(ordered, s.key_min)
        if j < len(ordered) and ordered[j] <= s.key_max:
            out.append(s.index)
    return out


def check_unique(keys: list[pa.Array], known: pa.Array | None, name: str) -> None:
    parts = ([known] if known is not None else []) + keys
    if not parts:
        return
    allkeys = pa.chunked_array(parts, pa.string())
    counts = pc.value_counts(allkeys)
    dup = counts.filter(pc.greater(counts.field("counts"), scalar(1)))
    if len(dup) and known is not None:
        stored = dup.field("values").filter(pc.is_in(dup.field("values"), known))
        if len(stored):
            shown = ", ".join(repr(k) for k in stored[:5].to_pylist())
            mine = pa.chunked_array(keys, pa.string())  # (a rerun of an append that
            new = pc.count_distinct(mine).as_py()  # published: its keys, each once, all
            every = len(stored) == new == len(mine)  # stored)
            text = (f"append to {name!r}: {len(stored)} {'' if every else f'of its {new} '}"
                    f"key(s) are already stored in its latest version (e.g. {shown}"
                    f"{'; all of them' if every else ''}); an append adds samples and cannot "
                    "replace them: ")  # all stored; QA review63f: some new too, no rerun)
            if every:
                raise KeysStoredError(
                    text + "a rerun of an append that published finds its rows in (nothing "
                    "to do, unless their values changed: then commit a new version holding "
                    "the rows you want)")
            twice = len(mine) - new  # keys the append itself holds more than once
            dups = (f"; {twice} more of its rows repeat a key it holds already" if twice
                    else "")
            left = ", ".join(["the others are new"] * (new > len(stored))
                             + ["drop the repeated rows"] * bool(twice))
            raise SchemaError(text[:-2] + f"{dups}: leave out the rows already stored"
                              f"{f' ({left})' if left else ''}, give the new samples other "
                              "keys, or commit a new version holding the rows you want")
    if len(dup):
        shown = ", ".join(repr(k) for k in dup.field("values")[:5].to_pylist())
        raise SchemaError(
            f"{len(dup)} duplicate keys in one version (e.g. {shown}); keys must be unique: "
            "rename the samples or drop the duplicates before committing (a table's keys: "
            "key='column'; without one, rows are numbered after the rows already stored)"
        )
