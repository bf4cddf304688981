"""The commit protocol: shards, then manifest, then ref.

A crash at any point leaves every ref pointing at complete data: a ref only ever moves to a
manifest that is already stored, and a manifest is only stored once all its shards are.
Rerunning a commit re-encodes the same bytes, finds those shards present and uploads only the
missing ones.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import int64_array, numpy_values, scalar
from dload_arrow.config import progress_wanted
from dload_arrow.errors import ConflictError, SchemaError
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest, build_manifest, shard_rows
from dload_arrow.store.names import KEY_COLUMN, manifest_path, shard_path
from dload_arrow.store.readahead import read_ahead
from dload_arrow.store.refs import move_ref
from dload_arrow.store.rows import to_batches
from dload_arrow.store.shard import (
    DEFAULT_ROW_GROUP_SIZE,
    DEFAULT_SHARD_SIZE,
    ShardData,
    digest_of,
    write_shards,
)

__all__ = ["Version", "commit_samples", "store_manifest"]

_UPLOAD_THREADS = 8
_IN_FLIGHT = 4
_INDEX_ROW_GROUP = 256 * 1024


@dataclass(frozen=True)
class Version:
    """A committed version: its id, size, and what the commit had to upload."""

    name: str
    version: str
    num_rows: int
    shards_total: int
    shards_uploaded: int
    bytes_total: int
    bytes_uploaded: int
    seconds: float
    manifest: Manifest


def _crash_point(step: str) -> None:
    # Test hook for invariant 1: SIGKILL ourselves at a named step of the protocol.
    if os.environ.get("DLOAD_CRASH_AT") == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _upload(storage: Storage, shard: ShardData) -> int:
    """Store ``shard`` unless it is there; bytes uploaded (0: reused, and touched).

    Hashes it first when ``write_shards`` left that to this (upload) thread."""
    if not shard.digest:
        shard.digest = digest_of(shard.data)
    path = shard_path(shard.digest)
    # A reused shard may be old and unreferenced (left by a removed version): touching it
    # restarts gc's grace period, which then protects it like a freshly uploaded one.
    if storage.exists(path) and storage.touch(path):
        return 0
    if storage.put_if_absent(path, memoryview(shard.data)):  # no copy to a local root
        return shard.nbytes
    storage.touch(path)  # stored meanwhile by a concurrent commit of the same bytes
    return 0


def _check_reused(storage: Storage, name: str, reused: list[str]) -> None:
    """Every reused shard must still exist before the ref moves (gc may have raced us)."""
    missing = [d for d in reused if not storage.exists(shard_path(d))]
    if missing:
        raise ConflictError(
            f"commit to {name!r}: {len(missing)} stored shard(s) it reuses (first "
            f"{missing[0][:12]}) were deleted while it ran, by a gc running at the same time; "
            "nothing was published (the ref did not move). Commit again: the missing shards "
            "will be uploaded"
        )


class _Progress:
    def __init__(self, enabled: bool, name: str) -> None:
        self.bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(desc=f"commit {name}", unit="B", unit_scale=True, leave=False)
        self.rows = 0

    def update(self, rows: int, nbytes: int) -> None:
        self.rows += rows
        if self.bar is not None:
            self.bar.update(nbytes)
            self.bar.set_postfix(samples=self.rows, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _check_unique(keys: list[pa.Array], known: pa.Array | None) -> None:
    parts = ([known] if known is not None else []) + keys
    if not parts:
        return
    allkeys = pa.chunked_array(parts, pa.string())
    counts = pc.value_counts(allkeys)
    dup = counts.filter(pc.greater(counts.field("counts"), scalar(1)))
    if len(dup):
        shown = ", ".join(repr(k) for k in dup.field("values")[:5].to_pylist())
        raise SchemaError(
            f"{len(dup)} duplicate keys in one version (e.g. {shown}); keys must be unique: "
            "rename the samples or drop the duplicates before committing"
        )


def _key_index(keys: list[pa.Array], known: pa.Array | None) -> ShardData:
    parts = ([known] if known is not None else []) + keys
    allkeys = pa.chunked_array(parts, pa.string()).combine_chunks()
    order = pc.sort_indices(allkeys)
    table = pa.table(
        {KEY_COLUMN: allkeys.take(order), "row": int64_array(numpy_values(order))}
    )
    schema = table.schema
    return next(iter(write_shards(
        table.to_batches(), schema, shard_size=2**62, row_group_size=_INDEX_ROW_GROUP
    )))


def commit_samples(
    storage: Storage,
    name: str,
    samples: Any,
    *,
    key: str | None = None,
    meta: dict[str, Any] | None = None,
    recipe: str | None = None,
    schema: pa.Schema | None = None,
    shard_size: int = DEFAULT_SHARD_SIZE,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    parent: Manifest | None = None,
    parents: list[dict[str, Any]] | None = None,
    known_keys: pa.Array | None = None,
    progress: bool | None = None,
    move: bool = True,
) -> Version:
    """Encode, upload and publish ``samples`` as a new version of ``name``.

    With ``parent`` (append) the new version lists the parent's shards first and adds the new
    ones; ``known_keys`` are the parent's keys, checked for duplicates against the new ones.
    """
    start = time.perf_counter()
    if parent is not None:
        schema = schema or parent.schema
    batches = to_batches(samples, key=key, schema=schema)
    first = next(batches, None)
    if first is None and parent is None:
        raise SchemaError(f"nothing to commit to {name!r}: the samples are empty")
    if first is not None:
        schema = first.schema
        if parent is not None and not schema.equals(parent.schema):
            raise SchemaError(
                f"appended samples have schema {schema} but {name!r} has {parent.schema}"
            )
    assert schema is not None
    keys: list[pa.Array] = []

    def stream() -> Iterator[pa.RecordBatch]:
        for b in ([first] if first is not None else []):
            keys.append(b.column(0))
            yield b
        for b in batches:
            keys.append(b.column(0))
            yield b

    shards: list[ShardData] = []
    reused: list[str] = []  # digests of shards already stored (touched, not uploaded)
    uploaded = [0, 0]
    bar = _Progress(progress_wanted(progress), name)
    with ThreadPoolExecutor(_UPLOAD_THREADS) as pool:
        pending: deque[tuple[ShardData, Future[int]]] = deque()

        def drain(limit: int) -> None:
            while len(pending) > limit:
                done, fut = pending.popleft()
                n = fut.result()
                uploaded[0] += 1 if n else 0
                uploaded[1] += n
                if not n:
                    reused.append(done.digest)
                bar.update(done.rows, done.nbytes)
                _crash_point(f"shard{len(shards) - len(pending)}")
                done.data = pa.py_buffer(b"")  # the bytes are stored; free the memory

        for shard in write_shards(
            read_ahead(stream()), schema, shard_size=shard_size, row_group_size=row_group_size,
            digest=False,
        ):
            shards.append(shard)
            pending.append((shard, pool.submit(_upload, storage, shard)))
            drain(_IN_FLIGHT)
        drain(0)
    bar.close()
    _check_unique(keys, known_keys)
    _crash_point("shards")

    rows = shard_rows(shards, schema)
    sorted_new = all(s.keys_sorted for s in shards) and all(
        a.key_max < b.key_min for a, b in itertools.pairwise(shards)
    )
    if parent is not None:
        rows = pa.concat_tables([parent.table.replace_schema_metadata(None), rows])
        tail = parent.shards[-1].key_max if parent.shards else None
        sorted_new = sorted_new and parent.keys_sorted and (
            tail is None or not shards or tail < shards[0].key_min
        )
    index_info = None
    if not sorted_new and rows.num_rows:
        index = _key_index(keys, known_keys)
        wrote_index = _upload(storage, index)
        uploaded[1] += wrote_index  # bytes count; shards_uploaded is data shards
        if not wrote_index:
            reused.append(index.digest)
        index_info = {
            "digest": index.digest, "bytes": index.nbytes, "rows": index.rows,
            "footer_offset": index.footer_offset, "rg_rows": index.rg_rows,
            "rg_offsets": index.rg_offsets, "rg_bytes": index.rg_bytes,
            "rg_key_min": index.rg_key_min, "rg_key_max": index.rg_key_max,
        }
    manifest = build_manifest(
        name, schema, rows, keys_sorted=sorted_new, meta=meta, recipe=recipe,
        parents=parents or [], key_index=index_info,
        settings={"shard_size": shard_size, "row_group_size": row_group_size},
    )
    wrote = store_manifest(storage, manifest)
    uploaded[1] += wrote
    _crash_point("manifest")
    _check_reused(storage, name, reused)
    if move:
        move_ref(storage, name, "latest", manifest.version,
                 action="append" if parent is not None else "commit", unless_there=True)
    return Version(
        name=name, version=manifest.version, num_rows=manifest.num_rows,
        shards_total=len(manifest.shards), shards_uploaded=uploaded[0],
        bytes_total=manifest.num_bytes, bytes_uploaded=uploaded[1],
        seconds=time.perf_counter() - start, manifest=manifest,
    )


def store_manifest(storage: Storage, manifest: Manifest) -> int:
    """Write the manifest if absent; return the bytes written (0 when it was already there)."""
    data = manifest.to_bytes()
    path = manifest_path(manifest.name, manifest.version)
    if storage.exists(path):
        return 0
    return len(data) if storage.put_if_absent(path, data) else 0
