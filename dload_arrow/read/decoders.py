"""The decoding threads beside the reader: row groups decode ahead, off the reader's thread.

The reader (``read/reader.py``) decodes the first unit of each shard visit itself and hands
the visit's next ``DECODE_AHEAD`` units to :class:`Decoders`, so decoding runs on while the
reader waits for the consumer to take a batch. Without this hand-off the reader decoded one
unit, then blocked on the full queue, then decoded again: the consumer of ``ds.samples()``
found nothing ready 57% of its time while the decoding threads were idle 40% of theirs
(bench/notes/speed-work.md, "Sixteenth session").

Units go to the first thread, in order. While the consumer starves
(:class:`~dload_arrow.store.readahead.Starving`: it spends most of its time waiting) every
other unit goes to the second thread, so two row groups decode at once. A consumer that is
itself the bottleneck (10 KB images turned into ``bytes``) keeps its core: a second decoding
thread there only takes CPU from it (sequential samples: 249k with one thread, 236k with two
always on, 204k before the hand-off). Parquet decodes some columns slowly while turning them
into samples is cheap: a list column carries a repetition and a definition level per element,
so 2,048-token sequences decode at about 400 MB/s and that consumer starves.

The threads never work across a visit boundary. The reader takes every unit of a visit
before moving to the next, and has the threads close their files first. So a visit's hold on
a cached shard is released only when no thread reads the file any more.

:func:`threads_pay_off` decides the other way to decode in parallel: Arrow's own column
threads, for row groups whose columns are alike in size. :func:`one_batch` turns a decoded
row group into the one record batch the reader yields.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["Decoders", "one_batch", "threads_pay_off"]


class Decoders:
    """Decode row groups on ``threads`` background threads, each with its own memory-mapped
    file of the visit's shard.

    Args:
        decode: ``decode(parquet_file, row_group)``, safe to call from several threads at once.
        threads: decoding threads (each decodes the units given to it in the order given).
    """

    def __init__(self, decode: Callable[[pq.ParquetFile, int], pa.RecordBatch],
                 threads: int = 2) -> None:
        self._decode = decode
        self._pools = [ThreadPoolExecutor(1, thread_name_prefix=f"dload-decode{i}")
                       for i in range(max(1, threads))]
        # Each opened on its own thread; closed by the reader only when no decode is pending.
        self._files: list[tuple[tuple[str, bool], pq.ParquetFile] | None] = \
            [None] * len(self._pools)

    def submit(self, path: str, metadata: pq.FileMetaData, rg: int,
               thread: int = 0, verify: bool = False) -> Future[pa.RecordBatch]:
        """Start decoding row group ``rg`` of the shard file at ``path`` on thread ``thread``
        (modulo the number of threads); ``verify``: check its pages' CRCs."""
        i = thread % len(self._pools)
        return self._pools[i].submit(self._run, i, path, metadata, rg, verify)

    def end_visit(self) -> None:
        """Close the visit's files. Call it before leaving a visit, with no decode pending."""
        self._close()

    def close(self) -> None:
        """Wait for the decodes in flight, stop the threads, close the files.

        No new work is submitted here: a reader's cleanup can run while another thread holds
        ``concurrent.futures``' global lock (a garbage-collected reader finalized inside a
        thread's start), and ``submit`` would wait for that lock forever.
        """
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)
        self._close()

    def _run(self, i: int, path: str, metadata: pq.FileMetaData, rg: int,
             verify: bool) -> pa.RecordBatch:
        got = self._files[i]
        if got is None or got[0] != (path, verify):
            if got is not None:
                got[1].close()
            # pre_buffer off, as in open_shard: a memory-mapped file needs no IO threads
            got = ((path, verify), pq.ParquetFile(path, memory_map=True, metadata=metadata,
                                                  pre_buffer=False,
                                                  page_checksum_verification=verify))
            self._files[i] = got
        return self._decode(got[1], rg)

    def _close(self) -> None:
        files, self._files = self._files, [None] * len(self._pools)
        for got in files:
            if got is not None:
                got[1].close()


def threads_pay_off(decoded: pa.RecordBatch | pa.Table) -> bool:
    """Whether decoding row groups like ``decoded`` (one decoded already, its projected
    columns) gains from Arrow's threads (one task per column).

    Only when the columns besides the largest hold at least half its bytes: there is then
    work to run beside it (tabular rows decode 17% faster with threads). When one column
    holds nearly all the bytes (images, token sequences) nothing runs beside it, and the
    tasks' hand-offs cost CPU (images: 270k -> 330k rows/s without them; speed-work.md,
    "Ninth session"). The reader's own threads already decode units in parallel. Measured on
    a decoded row group, not its footer's column metadata: a garbled footer aborted the
    process there, inside pyarrow, before any read could refuse it (QA review57, review57b).
    """
    sizes = [c.nbytes for c in decoded.columns]
    largest = max(sizes, default=0)
    return sum(sizes) - largest >= largest / 2


def one_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """Exactly one RecordBatch with ``schema`` holding the rows of ``table`` (maybe none).

    A decoded row group (one chunk per column, the projection's columns in order) becomes a
    batch with a single call into Arrow. Every call that releases the GIL must take it back,
    and while another thread runs Python (the consumer turning rows into samples) that wait
    lasts up to the interpreter's switch interval, 5 ms: the extra calls of the general path
    (select, combine_chunks, to_batches) cost a contended decoder 2-3 ms a row group
    (bench/notes/speed-work.md, "Sixth session").
    """
    if table.schema.names != schema.names:
        table = table.select(schema.names)
    if table.num_rows == 0:
        return pa.RecordBatch.from_arrays(
            [pa.array([], type=f.type) for f in schema], schema=schema
        )
    if table.schema.equals(schema, check_metadata=True) and all(
            c.num_chunks == 1 for c in table.columns):
        return table.to_batches()[0]
    batches = table.combine_chunks().to_batches()
    batch = batches[0] if len(batches) == 1 else pa.Table.from_batches(batches).to_batches()[0]
    if batch.schema != schema:
        batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema)
    return batch
