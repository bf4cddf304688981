"""The limit row: plain pyarrow over the very Parquet shards dload_arrow wrote.

No cache, no planner, no prefetch: record batches (batch unit) and ``to_pylist`` per batch
(sample unit). Windowed shuffle reads row groups in a seeded random order through a buffer;
full shuffle reads the whole dataset into memory and ``take``s a permutation (what a loader
could do at best when everything fits in RAM).

Its batches hold what dload_arrow's do, so that a batch cell compares the same work (QA
bench56: 256-row batches against dload_arrow's row groups of 21,000 tabular rows made the
ratio one of per-batch overheads): one row group each in order, and shuffled, 1,024 rows or
4 MiB, whichever is fewer (``DEFAULT_CHUNK_ROWS``, ``CHUNK_BYTES``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.adapters.base import Adapter, Ctx, IterSpec, Unsupported
from bench.adapters.common import batch_rows, cpu_map, in_loader, worker_share

__all__ = ["ParquetAdapter"]


def _shuffled_batch_rows(f: pq.ParquetFile) -> int:
    """Rows of a shuffled batch: as dload_arrow's chunks, 1,024 rows or 4 MiB of them."""
    from dload_arrow.pipeline.dataset import DEFAULT_CHUNK_ROWS
    from dload_arrow.pipeline.row_bytes import CHUNK_BYTES

    rg = f.metadata.row_group(0)
    per_row = max(1, rg.total_byte_size // max(1, rg.num_rows))  # uncompressed
    return max(1, min(DEFAULT_CHUNK_ROWS, CHUNK_BYTES // per_row))


def shard_files(root: str, name: str) -> list[str]:
    """Relative shard paths of dataset ``name`` in manifest order (read from the manifest)."""
    from dload_arrow import Repository
    from dload_arrow.store.names import shard_path

    repo = Repository.open(root)
    return [shard_path(e.digest) for e in repo.manifest(name).shards]


class ParquetAdapter(Adapter):
    name = "pyarrow"

    def version(self) -> str:
        return pa.__version__

    def ingest(self, table: pa.Table, out: Path) -> dict[str, Any]:
        raise NotImplementedError("the limit row reads dload_arrow's shards; it ingests nothing")

    def _open(self, ctx: Ctx, spec: IterSpec) -> tuple[Any, list[str]]:
        name = ctx.extra["dataset"]
        files = ctx.extra["shards"]
        if spec.cache == "cold":
            from pyarrow import fs

            fsys = fs.S3FileSystem(endpoint_override=ctx.endpoint, scheme="http",
                                   access_key="bench", secret_key="bench", region="us-east-1")
            bucket_prefix = ctx.s3_url.removeprefix("s3://")  # type: ignore[union-attr]
            return fsys, [f"{bucket_prefix}/{f}" for f in files]
        del name
        return None, [str(ctx.local / f) for f in files]

    def epoch(self, ctx: Ctx, spec: IterSpec) -> Iterable[Any]:
        if spec.mix:
            raise Unsupported("the limit row has no mixing")
        fsys, files = self._open(ctx, spec)

        def pf(path: str) -> pq.ParquetFile:
            if fsys is None:
                return pq.ParquetFile(path, memory_map=False)
            return pq.ParquetFile(fsys.open_input_file(path))

        def batches() -> Iterator[pa.RecordBatch]:
            wid, nw = worker_share()
            rng = np.random.default_rng([spec.seed, spec.epoch, 1])
            if spec.mode == "sequential":
                for path in files[wid::nw]:
                    f = pf(path)
                    for g in range(f.num_row_groups):
                        yield from f.read_row_group(g).combine_chunks().to_batches()
                return
            size = _shuffled_batch_rows(pf(files[0]))
            if spec.mode == "windowed":
                units = [(p, g) for p in files for g in range(pf(p).num_row_groups)]
                order = rng.permutation(len(units))[wid::nw]
                opened: dict[str, pq.ParquetFile] = {}

                def groups() -> Iterator[pa.RecordBatch]:
                    for i in order:
                        p, g = units[i]
                        f = opened.get(p) or opened.setdefault(p, pf(p))
                        yield from f.read_row_group(g).to_batches()

                # Buffer whole row groups; once ``window`` rows are held, emit a random
                # half of them in batches (Arrow ``take``, no per-row Python).
                buf: list[pa.RecordBatch] = []
                held = 0

                def drain(keep: int) -> Iterator[pa.RecordBatch]:
                    nonlocal buf, held
                    table = pa.Table.from_batches(buf).combine_chunks()
                    perm = rng.permutation(table.num_rows)
                    out, rest = perm[: table.num_rows - keep], perm[table.num_rows - keep:]
                    for s in range(0, len(out), size):
                        yield from table.take(pa.array(out[s:s + size])).to_batches()
                    buf = table.take(pa.array(rest)).to_batches() if keep else []
                    held = keep

                for b in groups():
                    buf.append(b)
                    held += b.num_rows
                    if held >= spec.window:
                        yield from drain(spec.window // 2)
                if held:
                    yield from drain(0)
            else:  # full: everything in memory, then take a permutation
                # one contiguous copy first: `take` over a many-chunk table is ~20x slower
                table = pa.concat_tables(pf(p).read() for p in files).combine_chunks()
                perm = rng.permutation(table.num_rows)[wid::nw]
                for s in range(0, len(perm), size):
                    yield table.take(pa.array(perm[s:s + size])).combine_chunks().to_batches()[0]

        def items() -> Iterator[Any]:
            if spec.unit == "batch":
                yield from batches()
            elif spec.unit == "map":
                for b in batches():
                    yield from map(cpu_map, batch_rows(b))
            else:
                for b in batches():
                    yield from batch_rows(b)

        return in_loader(items, spec.workers)

    def keys(self, item: Any, unit: str) -> Any:
        if unit == "sample":
            return int(item["__key__"])
        return pc.cast(item.column("__key__"), pa.int64()).to_numpy()
