"""MosaicML streaming: MDS shards, zstd, StreamingDataset (local dir warm, S3 remote cold)."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.adapters.base import Adapter, Ctx, IterSpec, Unsupported
from bench.adapters.common import Pristine, collate_dicts, cpu_map, identity

__all__ = ["MDSAdapter", "peer_rows"]


def _import() -> Any:
    # ``import streaming`` imports streaming.vision, which needs torchvision: the CPU torch
    # here has no matching torchvision, and vision is not used (BENCH-NOTES).
    sys.modules.setdefault("streaming.vision", types.ModuleType("streaming.vision"))
    import streaming

    return streaming


def _mds_type(t: pa.DataType) -> str:
    if pa.types.is_binary(t):
        return "bytes"
    if pa.types.is_string(t):
        return "str"
    if pa.types.is_boolean(t):
        return "uint8"
    if pa.types.is_fixed_size_list(t):
        return f"ndarray:{t.value_type}:{t.list_size}"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return {"double": "float64", "float": "float32"}.get(str(t), str(t))
    raise ValueError(f"no MDS encoding for {t}")


def _mapped(streaming: Any) -> Any:
    class Mapped(streaming.StreamingDataset):  # type: ignore[misc,name-defined]
        """The map runs where samples are produced (in the DataLoader workers)."""

        def __getitem__(self, idx: int) -> Any:
            return cpu_map(super().__getitem__(idx))

    return Mapped


def peer_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The workload's rows as Python dicts (numpy rows for tensors): the peers' input."""
    from bench.adapters.common import batch_rows

    out: list[dict[str, Any]] = []
    for b in table.to_batches(4096):
        out.extend(batch_rows(b))
    return out


class MDSAdapter(Pristine, Adapter):
    name = "mosaicml-streaming"

    def version(self) -> str:
        return str(_import().__version__)

    def preload(self, spec: IterSpec) -> None:
        if spec.cache == "cold":  # its S3 client, before the clock as every system's
            import boto3  # noqa: F401

    def ingest(self, table: pa.Table, out: Path) -> dict[str, Any]:
        streaming = _import()
        columns = {f.name: _mds_type(f.type) for f in table.schema}
        rows = self.prepared if self.prepared is not None else peer_rows(table)
        with streaming.MDSWriter(out=str(out), columns=columns, compression="zstd",
                                 size_limit=self.shard_bytes or 1 << 26) as w:
            for r in rows:
                w.write(r)
        return {"columns": columns, "shard_limit": "64 MiB", "compression": "zstd"}

    def epoch(self, ctx: Ctx, spec: IterSpec) -> Iterable[Any]:
        streaming = _import()
        if spec.cache == "cold":
            os.environ["S3_ENDPOINT_URL"] = ctx.endpoint or ""
        kw: dict[str, Any] = {"batch_size": spec.batch_size, "shuffle_seed": spec.seed}
        if spec.mode == "sequential":
            kw["shuffle"] = False
        elif spec.mode == "windowed":
            kw.update(shuffle=True, shuffle_algo="py1e", shuffle_block_size=spec.window)
        elif spec.mode == "full":
            kw.update(shuffle=True, shuffle_algo="naive")
        else:
            raise Unsupported(spec.mode)
        if spec.cache_budget:
            kw["cache_limit"] = spec.cache_budget

        def stream(local: Path | None, remote: str | None, sub: str) -> dict[str, Any]:
            if spec.cache == "cold":
                return {"remote": remote, "local": str(ctx.cache_dir / sub)}  # type: ignore[operator]
            return {"local": str(local)}

        if spec.mix:
            streams = [
                streaming.Stream(proportion=spec.mix[0], **stream(ctx.local, ctx.s3_url, "a")),
                streaming.Stream(proportion=spec.mix[1], **stream(ctx.local_b, ctx.s3_url_b, "b")),
            ]
            ds = streaming.StreamingDataset(streams=streams, epoch_size=spec.limit, **kw)
        else:
            cls = _mapped(streaming) if spec.unit == "map" else streaming.StreamingDataset
            ds = cls(**stream(ctx.local, ctx.s3_url, "a"), **kw)
        if spec.workers == 0 and spec.unit != "batch":
            return ds
        import torch.utils.data as tud

        if spec.unit != "batch":
            return tud.DataLoader(ds, batch_size=None, num_workers=spec.workers,
                                  collate_fn=identity)
        return tud.DataLoader(ds, batch_size=spec.batch_size, num_workers=spec.workers,
                              collate_fn=collate_dicts)
