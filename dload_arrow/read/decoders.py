"""A second decoder for when the consumer waits for row groups.

Parquet decodes some columns slowly while turning them into samples is cheap. A list column
carries a repetition and a definition level per element, so 2,048-token sequences decode at
about 400 MB/s, and the rows become numpy views at once. The consumer then waits on the
read-ahead queue with a core idle. :class:`SecondDecoder` decodes the next row group of the same
shard visit on another thread while the reader decodes the current one. It does this only
while the consumer is starving (:class:`~dload_arrow.store.readahead.Starving`), so a consumer
that is itself the bottleneck keeps its core: for 10 KB images, turning values into ``bytes``
is the slow part.

It never works across a visit boundary. The reader waits for it, and has it close its file,
before moving to the next visit. So a visit's hold on a cached shard is released only when
neither decoder reads the file any more.

:func:`threads_pay_off` decides the other way to decode in parallel: Arrow's own column
threads, for row groups whose columns are alike in size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["SecondDecoder", "threads_pay_off"]


class SecondDecoder:
    """Decode row groups on one background thread, each shard file opened once per visit.

    Args:
        decode: ``decode(parquet_file, row_group)``, safe to call from two threads at once.
    """

    def __init__(self, decode: Callable[[pq.ParquetFile, int], pa.RecordBatch]) -> None:
        self._decode = decode
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="dload-decode")
        # Opened on the pool thread; closed by the reader only when no decode is pending.
        self._file: tuple[str, pq.ParquetFile] | None = None

    def submit(self, path: str, metadata: pq.FileMetaData, rg: int) -> Future[pa.RecordBatch]:
        """Start decoding row group ``rg`` of the shard file at ``path``."""
        return self._pool.submit(self._run, path, metadata, rg)

    def end_visit(self) -> None:
        """Close the visit's file. Call it before leaving a visit, with no decode pending."""
        self._close()

    def close(self) -> None:
        """Wait for a decode in flight, stop the thread, close the file.

        No new work is submitted here: a reader's cleanup can run while another thread holds
        ``concurrent.futures``' global lock (a garbage-collected reader finalized inside a
        thread's start), and ``submit`` would wait for that lock forever.
        """
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._close()

    def _run(self, path: str, metadata: pq.FileMetaData, rg: int) -> pa.RecordBatch:
        if self._file is None or self._file[0] != path:
            self._close()
            self._file = (path, pq.ParquetFile(path, memory_map=True, metadata=metadata))
        return self._decode(self._file[1], rg)

    def _close(self) -> None:
        if self._file is not None:
            self._file[1].close()
            self._file = None


def threads_pay_off(row_group: pq.RowGroupMetaData, names: Sequence[str]) -> bool:
    """Whether decoding the columns ``names`` of row groups like ``row_group`` gains from
    Arrow's threads (one task per column).

    Only when the columns besides the largest hold at least half its bytes: there is then
    work to run beside it (tabular rows decode 17% faster with threads). When one column
    holds nearly all the bytes (images, token sequences) nothing runs beside it, and the
    tasks' hand-offs cost CPU (images: 270k -> 330k rows/s without them; speed-work.md,
    "Ninth session"). The reader's own threads already decode units in parallel.
    """
    sizes = dict.fromkeys(names, 0)
    for i in range(row_group.num_columns):
        column = row_group.column(i)
        path = column.path_in_schema  # a list's values are "name.list.element"
        for name in _prefixes(path):  # the names it may belong to (a name may hold dots)
            if name in sizes:
                sizes[name] += column.total_uncompressed_size
    largest = max(sizes.values(), default=0)
    return sum(sizes.values()) - largest >= largest / 2


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
