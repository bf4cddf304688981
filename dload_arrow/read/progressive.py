"""The first shard of a cold read, read while its one GET is still writing it to the cache.

Time to first batch on a cold cache would otherwise be the download of a whole shard (128 MB
by default) plus its sha256. The manifest records where each row group's bytes lie, and
Parquet needs only the footer besides them: so the reader fetches the footer (one small ranged
GET, kept under ``<cache_dir>/footers``), on a thread of its own from the start, and decodes
row groups from the download's temp file as soon as their bytes have arrived. (Fetched only
once the first row group was there, the footer's GET came after the download's first bytes:
cold first items 0.61-0.78 s on moto against 0.49-0.65 s, four alternating runs.) The shard
is still fetched with exactly one GET, and the rest of the stream reads the verified file;
should the download fail its check, the error surfaces when the reader moves on to the
verified file.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from dload_arrow.read.context import ReadContext
from dload_arrow.read.fetcher import ShardFetcher
from dload_arrow.read.random_access import RowGroupReader, ShardRef
from dload_arrow.store.manifest import ShardEntry
from dload_arrow.waits import future_result

__all__ = ["PartialShard"]

_POLL = 0.002


class PartialShard:
    """Row groups of visit 0's shard, from its in-progress download (see module doc)."""

    def __init__(self, ctx: ReadContext, entry: ShardEntry, fetcher: ShardFetcher) -> None:
        self.ctx = ctx
        self.ref = ShardRef.of(entry)
        self.fetcher = fetcher
        self._path: str | None = None
        self._pf: pq.ParquetFile | None = None
        self._opened = 0  # the file's size when _pf was opened
        pool = ThreadPoolExecutor(1, thread_name_prefix="dload-footer")
        self._footer = pool.submit(RowGroupReader(ctx).metadata, self.ref)
        pool.shutdown(wait=False)  # the thread ends with its one GET

    def read(self, rg: int, columns: list[str] | None) -> pa.Table | None:
        """Row group ``rg``, once its bytes are written; None when the verified file is there."""
        need = self.ref.rg_offsets[rg] + self.ref.rg_bytes[rg]
        while True:
            if self.fetcher.ready(0):
                return None
            path = self._path or self.ctx.cache().partial_file(self.ref.digest)
            if path is not None:
                try:
                    size = os.stat(path).st_size
                except FileNotFoundError:  # renamed into place, or failed: the fetcher says
                    self.fetcher.get(0)
                    return None
                self._path = path
                if size >= need:
                    if self._pf is None or self._opened < need:
                        # Parquet takes the file's size when opened: reopen as it grows.
                        self.close()
                        try:
                            # pages checked against their CRCs: these bytes are not yet
                            # hashed, and a bad one must not reach the consumer
                            self._pf = pq.ParquetFile(pa.OSFile(path), metadata=self._meta(),
                                                      pre_buffer=False,  # a local file
                                                      page_checksum_verification=True)
                        except FileNotFoundError:
                            self.fetcher.get(0)
                            return None
                        self._opened = size
                    try:
                        return self._pf.read_row_group(rg, columns=columns)
                    except OSError as e:  # a page fails its CRC: the whole download's
                        if e.errno is not None:  # sha256 decides (the fetcher raises the
                            raise  # IntegrityError); if it passes, read the verified file
                        self.fetcher.get(0)
                        return None
            time.sleep(_POLL)

    def _meta(self) -> pq.FileMetaData:
        return future_result(self._footer)  # its errors (a missing shard) are raised here

    def close(self) -> None:
        if self._pf is not None:
            self._pf.close()
            self._pf = None
