"""The commit protocol: shards, then manifest, then ref.

A crash at any point leaves every ref pointing at complete data: a ref only ever moves to a
manifest that is already stored, and a manifest is only stored once all its shards are.
Rerunning a commit re-encodes the same bytes, finds those shards present and uploads only the
missing ones.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import time
import warnings
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from dload_arrow.config import progress_wanted
from dload_arrow.errors import ConfigError, EmptyInputError, SchemaError, user_stacklevel
from dload_arrow.sizes import parse_size
from dload_arrow.storage import Storage
from dload_arrow.store.key_index import KeyReader
from dload_arrow.store.list_types import item_named
from dload_arrow.store.manifest import Manifest, check_meta
from dload_arrow.store.manifest_meta import check_parents
from dload_arrow.store.publish import (
    Rebase,
    Uploaded,
    crash_point,
    publish,
    store_manifest,
    upload_shard,
)
from dload_arrow.store.readahead import read_ahead
from dload_arrow.store.rows import to_batches
from dload_arrow.store.schema_check import check_schema, warn_valueless
from dload_arrow.store.shard import (
    DEFAULT_ROW_GROUP_SIZE,
    DEFAULT_SHARD_SIZE,
    ShardData,
    write_shards,
)
from dload_arrow.store.version import Version
from dload_arrow.type_walk import leaf_count
from dload_arrow.waits import future_result

__all__ = ["Version", "commit_samples", "store_manifest"]

_UPLOAD_THREADS = 8
_IN_FLIGHT = 4


class _Progress:
    """The commit's bar: the bytes encoded so far (moved per row group), with the samples
    taken by the encoder (counted per batch) and the shards stored (uploaded or found
    present) in its postfix, so a long commit moves long before its first shard is uploaded.
    Its final bytes are the new shards' total size. ``options`` go to tqdm (tests)."""

    _EVERY = 0.5  # seconds between redraws for samples alone (tqdm throttles the rest)

    def __init__(self, enabled: bool, name: str, **options: Any) -> None:
        self.bar: Any = None
        self.rows = 0
        self.shards = 0
        self._drawn = time.monotonic()
        if enabled:
            from dload_arrow.config import progress_bar

            self.bar = progress_bar()(desc=f"commit {name} (encoded)", unit="B",
                                      unit_scale=True, postfix=self._postfix(), **options)

    def _postfix(self) -> str:
        return f"{self.rows:,} samples, shards stored: {self.shards}"

    def taken(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches``, counting their rows as the encoder takes each one."""
        for b in batches:
            self.rows += b.num_rows
            if self.bar is not None and time.monotonic() - self._drawn >= self._EVERY:
                self._drawn = time.monotonic()
                self.bar.set_postfix_str(self._postfix())  # redraws
            yield b

    def encoded(self, rows: int, nbytes: int) -> None:
        """A row group of ``nbytes`` (or a shard's footer) was encoded (its rows were
        counted as they were taken)."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            self.bar.update(nbytes)  # redraws when tqdm's interval has passed

    def stored(self) -> None:
        """A shard was uploaded, or found stored already."""
        self.shards += 1
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix())  # the final counts stay on screen
            self.bar.close()


def _size(value: int | str, what: str) -> int:
    """A size argument in bytes: an int, or text such as ``"128MiB"``; above 0."""
    n: Any = parse_size(value, what) if isinstance(value, str) else value
    if isinstance(n, bool) or not hasattr(type(n), "__index__") or operator.index(n) <= 0:
        raise ConfigError(f"{what} must be a size above 0 (bytes, or text such as '128MiB'), "
                          f"got {value!r}")
    return operator.index(n)  # a numpy integer too


# The default row group holds at least this much of each column: 2 MiB of a 5,000-column row
# was 52 rows, and reading pays per column chunk (1,000 rows of 5,000 int64 columns: 15 s to
# read in 20 row groups, 1 s in one; QA cliffs56). Only past 128 columns.
_MIN_COLUMN_CHUNK = 16 * 2**10


def _row_group_target(schema: pa.Schema, requested: int, shard_size: int) -> int:
    """The row-group size to cut at: ``requested``, or for the default and a wide schema,
    ``_MIN_COLUMN_CHUNK`` a leaf column (at most a shard)."""
    if requested != DEFAULT_ROW_GROUP_SIZE:
        return requested
    return min(shard_size, max(requested, leaf_count(pa.struct(list(schema))) * _MIN_COLUMN_CHUNK))


def _next_row_number(parent: Manifest, read_keys: KeyReader | None, name: str = "") -> int:
    """The first generated key of rows appended without keys: after the stored rows, and
    after every stored row-number key (a recommit that dropped rows keeps its old keys). A
    shard's key range names its largest row number unless it also holds keys sorting after
    digits (``'c'``): only those shards' keys are read."""
    numbered, mixed = [-1], []
    for i, s in enumerate(parent.shards):
        if _row_number(s.key_max):
            numbered.append(int(s.key_max))
        elif s.key_min <= _LAST_ROW_NUMBER:
            mixed.append(i)
    if mixed and read_keys is not None:
        numbered += [int(k) for k in read_keys(parent, mixed).to_pylist() if _row_number(k)]
    first = min((s.key_min for s in parent.shards), default="")
    # keys of its own: none a row number (QA eng58), or 12-digit ids far past any row number
    # (UPC codes: QA review59b; generated keys count from 0)
    if parent.shards and (len(numbered) == 1 or (
            _row_number(first) and int(first) > 10 * (parent.num_rows + 1000))):
        warnings.warn(f"appending rows without keys to {name!r}, whose {parent.num_rows:,} rows "
                      f"have keys of their own (e.g. {first!r}): the new rows get row numbers "
                      "as keys; to key them as the others, pass key= (--key-column) naming "
                      "their key column", stacklevel=user_stacklevel())
    return max(parent.num_rows, 1 + max(numbered))


_LAST_ROW_NUMBER = "9" * 12


def _row_number(key: str) -> bool:
    return len(key) == 12 and key.isascii() and key.isdigit()  # (not "²": int() refuses it)


def commit_samples(
    storage: Storage,
    name: str,
    samples: Any,
    *,
    key: str | None = None,
    meta: dict[str, Any] | None = None,
    recipe: str | None = None,
    schema: pa.Schema | None = None,
    shard_size: int | str = DEFAULT_SHARD_SIZE,
    row_group_size: int | str = DEFAULT_ROW_GROUP_SIZE,
    parent: Manifest | None = None,
    parents: list[dict[str, Any]] | None = None,
    read_keys: KeyReader | None = None,
    progress: bool | None = None,
    move: bool = True,
    rebase: Rebase | None = None,
    protected: frozenset[str] = frozenset(),
    protected_by: str | None = None,
    action: str = "commit",
    if_latest: str | None = None,
) -> Version:
    """Encode, upload and publish ``samples`` as a new version of ``name``.

    With ``parent`` (append) the new version lists the parent's shards first and adds the new
    ones; ``read_keys`` reads the parent's stored keys (those that could collide with the new
    ones, and those a new key index part needs: ``key_index.py``).
    ``meta`` / ``recipe`` of None keep those of the version the append lands on. ``rebase``
    gives the current ``latest`` when it moved during the append
    (``publish.py``). ``protected``: digests the stored manifest of version ``protected_by``
    of ``name`` lists (reused without a touch while that manifest stays stored). ``action``:
    what the ref log says moved ``latest`` (``derive`` for repo.derive; an append's is append).
    ``if_latest``: a commit publishes only while ``latest`` is that version (``replaced.py``).
    """
    start = time.perf_counter()
    check_meta(meta, recipe)  # before any upload, not when the manifest is built
    check_parents(parents)
    shard_size = _size(shard_size, "shard_size")
    # A row group never spans shards: a shard_size under the row-group size sets both (a
    # 1 MiB shard_size gave 2 MiB shards, one default row group each).
    row_group_size = min(_size(row_group_size, "row_group_size"), shard_size)
    if parent is not None:
        schema = schema or parent.schema
    elif isinstance(schema, pa.Schema):  # a list's value field named as dload names it (QA
        # chat65; another type is refused below, naming it)
        schema = pa.schema([f.with_type(item_named(f.type)) for f in schema], schema.metadata)
    inferred = schema is None
    batches = to_batches(samples, key=key, schema=schema,
                         append_to=None if parent is None else name,
                         key_offset=0 if parent is None else functools.cache(
                             lambda: _next_row_number(parent, read_keys, name)))
    first = next(batches, None)
    if first is None:  # an empty append would only make a new id for the same rows
        what = "append" if parent is not None else "commit"
        raise EmptyInputError(f"nothing to {what} to {name!r}: the samples are empty")
    schema = first.schema
    check_schema(schema)  # a shape that cannot reshape, a struct Parquet cannot store
    if inferred:
        warn_valueless(schema, name)
    if parent is not None and not schema.equals(parent.schema):
        raise SchemaError(f"appended samples have schema {schema} but {name!r} has "
                          f"{parent.schema}")
    target = _row_group_target(schema, row_group_size, shard_size)
    keys: list[pa.Array] = []

    def stream() -> Iterator[pa.RecordBatch]:
        for b in itertools.chain([first], batches):
            keys.append(b.column(0))
            yield b

    shards: list[ShardData] = []
    up = Uploaded(name, schema, shards, keys,
                  {"shard_size": shard_size, "row_group_size": row_group_size},
                  protected_by=protected_by if protected else None, protected=protected,
                  seen=protected_by, if_latest=if_latest)
    uploaded, reused = up.uploaded, up.reused
    bar = _Progress(progress_wanted(progress), name)
    with ThreadPoolExecutor(_UPLOAD_THREADS) as pool:
        pending: deque[tuple[ShardData, Future[int]]] = deque()

        def drain(limit: int) -> None:
            while len(pending) > limit:
                done, fut = pending.popleft()
                n = future_result(fut)
                uploaded[0] += 1 if n else 0
                uploaded[1] += n
                if not n:
                    reused.append(done.digest)
                bar.stored()
                crash_point(f"shard{len(shards) - len(pending)}")
                done.data = pa.py_buffer(b"")  # the bytes are stored; free the memory

        for shard in write_shards(
            bar.taken(read_ahead(stream())), schema, shard_size=shard_size,
            row_group_size=target, digest=False, on_row_group=bar.encoded,
        ):
            shards.append(shard)
            pending.append((shard, pool.submit(upload_shard, storage, shard, protected)))
            drain(_IN_FLIGHT)
        drain(0)
    bar.close()
    crash_point("shards")
    lineage = list({json.dumps(p, sort_keys=True, default=str): p  # each once (QA lineage64:
                    for p in parents or []}.values())  # a repeat was stored twice, another id)
    if parent is not None and not any(p.get("relation") == "append" for p in lineage):
        lineage.insert(0, {"name": name, "version": parent.version, "relation": "append"})
    manifest = publish(storage, up, parent=parent, read_keys=read_keys, rebase=rebase,
                       meta=meta, recipe=recipe, parents=lineage, move=move, action=action)
    return Version(
        name=name, version=manifest.version, num_rows=manifest.num_rows,
        shards_total=len(manifest.shards), shards_uploaded=up.uploaded[0],
        bytes_total=manifest.num_bytes, bytes_uploaded=up.uploaded[1],
        seconds=time.perf_counter() - start, manifest=manifest,
        manifest_bytes_uploaded=up.manifest_bytes,
    )
