"""LitData: ``optimize`` into zstd chunks, ``StreamingDataset`` + ``StreamingDataLoader``."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.adapters.base import Adapter, Ctx, IterSpec, Unsupported
from bench.adapters.common import Pristine, batch_rows, collate_dicts, cpu_map

__all__ = ["LitDataAdapter"]

_CHUNK_ROWS = 2_000


def _rows(path: str, start: int) -> Iterator[dict[str, Any]]:
    """optimize()'s fn: the rows [start, start + _CHUNK_ROWS) of the workload's Arrow file."""
    with pa.memory_map(path) as src:
        table = pa.ipc.open_file(src).read_all()
    yield from batch_rows(table.slice(start, _CHUNK_ROWS))


def _allow_http() -> None:
    # LitData ignores AWS_ALLOW_HTTP: its obstore client options must allow http for a
    # loopback endpoint (BENCH-NOTES). The options dict is module state; mutate it in place.
    from litdata.streaming import downloader

    opts = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
    if isinstance(opts, dict):
        opts["allow_http"] = True


class LitDataAdapter(Pristine, Adapter):
    name = "litdata"

    def version(self) -> str:
        import litdata

        return str(litdata.__version__)

    def ingest(self, table: pa.Table, out: Path) -> dict[str, Any]:
        import litdata

        src = self.extra_source  # the workload's Arrow IPC file (set by the harness)
        litdata.optimize(
            fn=functools.partial(_rows, src),
            inputs=list(range(0, table.num_rows, _CHUNK_ROWS)),
            output_dir=str(out),
            chunk_bytes=self.shard_bytes or "64MB", compression="zstd",
            num_workers=2,
            verbose=False, start_method="fork", reorder_files=False,
        )
        return {"chunk_bytes": "64MB", "compression": "zstd", "num_workers": 2}

    def epoch(self, ctx: Ctx, spec: IterSpec) -> Iterable[Any]:
        import litdata

        if spec.mode == "full":
            raise Unsupported("LitData has no full (global) shuffle")
        kw: dict[str, Any] = {"shuffle": spec.mode != "sequential", "seed": spec.seed}
        if spec.mode == "windowed":
            kw["item_shuffle_window"] = spec.window
        if spec.cache_budget:
            kw["max_cache_size"] = spec.cache_budget
        if spec.unit == "map":
            kw["transform"] = cpu_map

        def one(local: Path | None, url: str | None, sub: str) -> Any:
            if spec.cache == "cold":
                _allow_http()
                opts = {"endpoint_url": ctx.endpoint, "aws_access_key_id": "bench",
                        "aws_secret_access_key": "bench", "region_name": "us-east-1"}
                return litdata.StreamingDataset(
                    url, cache_dir=str(ctx.cache_dir / sub),  # type: ignore[operator]
                    storage_options=opts, **kw)
            return litdata.StreamingDataset(str(local), **kw)

        if spec.mix:
            ds: Any = litdata.CombinedStreamingDataset(
                [one(ctx.local, ctx.s3_url, "a"), one(ctx.local_b, ctx.s3_url_b, "b")],
                seed=spec.seed, weights=list(spec.mix), iterate_over_all=False)
        else:
            ds = one(ctx.local, ctx.s3_url, "a")
        if spec.unit != "batch":
            if spec.workers == 0:
                return ds
            return litdata.StreamingDataLoader(ds, batch_size=1, num_workers=spec.workers,
                                               collate_fn=_first)
        return litdata.StreamingDataLoader(ds, batch_size=spec.batch_size,
                                           num_workers=spec.workers, collate_fn=collate_dicts)


def _first(items: list[Any]) -> Any:
    return items[0]
