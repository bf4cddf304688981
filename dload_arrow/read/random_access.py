"""Random access: one row group by byte range, never the whole shard.

The manifest records each shard's footer offset and each row group's byte range: a row group
costs two ranged GETs on a cold cache (footer, row group; only some columns' chunks:
``chunk_ranges.py``) and one once the footer is cached (``<cache_dir>/footers``, outside the
byte budget). A shard in the cache is read from there; a local root is read in place."""

from __future__ import annotations

import contextlib
import io
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dload_arrow.errors import NotFoundError
from dload_arrow.read.chunk_ranges import needed_ranges
from dload_arrow.read.context import ReadContext
from dload_arrow.read.shard_errors import corrupt_shard, missing_shard, open_shard, remote_damage
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest, ShardEntry
from dload_arrow.store.names import KEY_COLUMN, check_digest, shard_path
from dload_arrow.store.tensor_layout import restore

__all__ = ["corrupt_shard", "open_shard", "RangeFile", "RowGroupReader", "ShardRef", "stored_keys"]

_META_CACHE = 512  # parsed footers kept, at most, and at most _META_BYTES of them
_META_BYTES = 256 * 2**20


class ShardRef:
    """Where a Parquet object is and how it is laid out (a data shard or the key index)."""

    def __init__(self, digest: str, nbytes: int, footer_offset: int,
                 rg_offsets: tuple[int, ...], rg_bytes: tuple[int, ...],
                 rg_rows: tuple[int, ...] | None = None) -> None:
        self.digest = check_digest(digest, "shard digest")
        self.nbytes = nbytes
        self.footer_offset = footer_offset
        self.rg_offsets = rg_offsets
        self.rg_bytes = rg_bytes
        self.rg_rows = rg_rows  # as the manifest lists them (a data shard's)

    @classmethod
    def of(cls, entry: ShardEntry) -> ShardRef:
        return cls(entry.digest, entry.bytes, entry.footer_offset, entry.rg_offsets,
                   entry.rg_bytes, tuple(entry.rg_rows))

    @classmethod
    def of_index(cls, info: dict[str, Any]) -> ShardRef:
        return cls(info["digest"], int(info["bytes"]), int(info["footer_offset"]),
                   tuple(info["rg_offsets"]), tuple(info["rg_bytes"]))


class RangeFile(io.RawIOBase):
    """A read-only file of ``size`` bytes of which some ranges are already in memory.

    Reads inside known ranges are served from memory. The Parquet reader's speculative read of
    the file's tail is answered from the footer alone (bytes before it are zeros the reader
    never interprets). Anything else is fetched with one ranged read from ``storage``.
    """

    def __init__(self, storage: Storage, path: str, size: int,
                 segments: dict[int, bytes]) -> None:
        super().__init__()
        self.storage = storage
        self.path = path
        self.size = size
        self.segments = dict(segments)
        self.pos = 0
        self.fetched = 0  # bytes read from storage beyond the known segments

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def _get(self, start: int, end: int) -> bytes:
        for off, data in self.segments.items():
            if off <= start and end <= off + len(data):
                return data[start - off : end - off]
        tail = self.segments.get(self.size - self._tail_len()) if self._tail_len() else None
        if tail is not None and end == self.size and start < self.size - len(tail):
            return bytes(self.size - len(tail) - start) + tail
        data = self.storage.read_range(self.path, start, end)
        self.fetched += len(data)
        return data

    def _tail_len(self) -> int:
        for off, data in self.segments.items():
            if off + len(data) == self.size:
                return len(data)
        return 0

    def readinto(self, buf: Any) -> int:
        n = min(len(buf), max(0, self.size - self.pos))
        if n == 0:
            return 0
        data = self._get(self.pos, self.pos + n)
        buf[:n] = data
        self.pos += n
        return n


class RowGroupReader:
    """Reads single row groups of shards through ``ctx``: from the cache, in place, or by range.

    Thread-safe; keeps parsed footers in memory (bounded) and on disk under the cache dir.
    """

    def __init__(self, ctx: ReadContext) -> None:
        self.ctx = ctx
        self._meta: OrderedDict[str, pq.FileMetaData] = OrderedDict()
        self._meta_bytes = 0  # their serialized sizes (a 4,000-column footer: 8 MB)
        self._lock = threading.Lock()

    def read(self, ref: ShardRef, rg: int, columns: list[str] | None = None,
             dataset: str = "", version: str | None = None) -> pa.Table:
        """Row group ``rg`` of ``ref`` (only ``columns`` when given); ``dataset`` and
        ``version`` name what is read in errors (a shard gone: removed with its version).

        A cached shard was verified whole when downloaded. A row group read in place or by
        range is not hashed: its pages' CRCs are checked instead (shards written before the
        writer added them have none), and a mismatch raises IntegrityError naming the shard.
        """
        table = self._read(ref, rg, columns, dataset, version)
        return restore(table)  # tensors stored as bytes: their lists again

    def _read(self, ref: ShardRef, rg: int, columns: list[str] | None, dataset: str,
              version: str | None) -> pa.Table:
        path = shard_path(ref.digest)
        cache = None if self.ctx.in_place else self.ctx.cache()
        hold = None if cache is None else cache.try_hold(ref.digest, ref.nbytes)
        known = self._known(ref.digest)  # a footer parsed once, not per row group read
        if hold is not None:
            try:
                with hold, pq.ParquetFile(hold.path, memory_map=True, pre_buffer=False,
                                          metadata=known,
                                          page_checksum_verification=True) as pf:
                    self._keep(ref.digest, known or pf.metadata)
                    return pf.read_row_group(rg, columns=columns)
            except (OSError, pa.ArrowInvalid):  # the cached copy went bad: read from the root
                corrupt_shard(self.ctx, ref.digest, dataset, "unreadable", hold.path)
        local = self.ctx.storage.local_path(path)
        if local is not None:
            with open_shard(self.ctx, local, ref.digest, dataset, metadata=known, verify=True,
                            version=version, size=ref.nbytes) as pf:
                self._keep(ref.digest, known or pf.metadata)
                return self._decode(pf, ref, rg, columns, dataset)
        start = ref.rg_offsets[rg]
        try:
            meta = self.metadata(ref)
            spans = needed_ranges(meta, rg, columns) or [(start, start + ref.rg_bytes[rg])]
            segments = {a: self.ctx.storage.read_range(path, a, b) for a, b in spans}
        except NotFoundError as e:  # removed and collected, or deleted outside dload
            raise missing_shard(self.ctx.storage, ref.digest, dataset, version) from e
        except (OSError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:  # (thrift: OSError)
            raise remote_damage(self.ctx, ref.digest, ref.nbytes, dataset, e) from e
        f = RangeFile(self.ctx.storage, path, ref.nbytes, segments)
        pf = pq.ParquetFile(f, metadata=meta, pre_buffer=False, page_checksum_verification=True)
        return self._decode(pf, ref, rg, columns, dataset)

    def _decode(self, pf: pq.ParquetFile, ref: ShardRef, rg: int, columns: list[str] | None,
                dataset: str) -> pa.Table:
        """Row group ``rg`` of ``pf``; bytes that do not decode (a page failing its CRC, a
        garbled page header) are an IntegrityError naming the shard, not Arrow's own error."""
        try:
            table = pf.read_row_group(rg, columns=columns)
        except (OSError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            if isinstance(e, OSError) and e.errno is not None:
                raise  # the system's (a disk's) error, not the shard's bytes
            text = " ".join(str(e).split())
            what = ("fails its page checksum" if "CRC" in text or "checksum" in text
                    else f"does not decode: {text}")
            raise corrupt_shard(self.ctx, ref.digest, dataset, f"row group {rg} {what}") from e
        # a footer garbled into other names or row counts decodes "fine" (QA review57b)
        lost = [c for c in columns or () if c not in table.column_names]
        rows = None if ref.rg_rows is None else ref.rg_rows[rg]
        if lost or (rows is not None and table.num_rows != rows):
            raise corrupt_shard(self.ctx, ref.digest, dataset, f"row group {rg} does not "
                                f"match its manifest: {table.num_rows} rows (of {rows}), "
                                f"columns {table.column_names}")
        return table

    def metadata(self, ref: ShardRef) -> pq.FileMetaData:
        """The parsed footer of ``ref``: memory, then the footer cache, then one ranged read."""
        meta = self._known(ref.digest)
        if meta is not None:
            return meta
        footer = self._footer_bytes(ref)
        f = RangeFile(self.ctx.storage, shard_path(ref.digest), ref.nbytes,
                      {ref.footer_offset: footer})
        try:
            meta = pq.ParquetFile(f).metadata
        except (OSError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
            with contextlib.suppress(OSError):  # not kept for the next lookup
                os.unlink(os.path.join(self.ctx.cache_dir, "footers", ref.digest[:2],
                                       ref.digest))
            raise
        self._keep(ref.digest, meta)
        return meta

    def _known(self, digest: str) -> pq.FileMetaData | None:
        with self._lock:
            meta = self._meta.get(digest)
            if meta is not None:
                self._meta.move_to_end(digest)
            return meta

    def _keep(self, digest: str, meta: pq.FileMetaData) -> None:
        """Keep ``meta``, the footer of shard ``digest`` (the same bytes whichever copy,
        cached, in place or remote, it was parsed from: the digest names them)."""
        with self._lock:
            if digest not in self._meta:
                self._meta_bytes += meta.serialized_size
            self._meta[digest] = meta
            while len(self._meta) > 1 and (len(self._meta) > _META_CACHE
                                           or self._meta_bytes > _META_BYTES):
                self._meta_bytes -= self._meta.popitem(last=False)[1].serialized_size

    def _footer_bytes(self, ref: ShardRef) -> bytes:
        size = ref.nbytes - ref.footer_offset
        path = os.path.join(self.ctx.cache_dir, "footers", ref.digest[:2], ref.digest)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
            if len(data) == size and data.endswith(b"PAR1"):
                return data
        except FileNotFoundError:
            pass
        data = self.ctx.storage.read_range(shard_path(ref.digest), ref.footer_offset, ref.nbytes)
        tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
        try:  # kept for the next lookup; a footer not kept costs a ranged GET, never the read
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:  # the cache deleted meanwhile, a full disk
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return data


def stored_keys(storage: Storage, manifest: Manifest,
                shards: Sequence[int] | None = None) -> pa.Array:
    """The keys of ``manifest``'s shards (those at indexes ``shards``, default all), in
    storage order (``append`` checks new keys against them and indexes them).

    Remote shards are read by ranges: the footer and the key column chunks only, not the whole
    shard (blobs can be most of the bytes).
    """
    parts = []
    entries = manifest.shards
    for entry in (entries if shards is None else [entries[i] for i in shards]):
        path = shard_path(entry.digest)
        src: Any = storage.local_path(path)
        if src is None:
            footer = storage.read_range(path, entry.footer_offset, entry.bytes)
            src = RangeFile(storage, path, entry.bytes, {entry.footer_offset: footer})
        # ParquetFile, not read_table: that imports pyarrow.dataset, and with it pandas
        with pq.ParquetFile(src, pre_buffer=True) as pf:
            parts.extend(pf.read(columns=[KEY_COLUMN]).column(0).chunks)
    return pa.chunked_array(parts, pa.string()).combine_chunks()
