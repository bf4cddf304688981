"""WebDataset: uncompressed tar shards written with ShardWriter, read with wds.WebDataset.

Cold reads stream each tar with ``pipe:curl`` from the loopback S3 server (objects are
public-read: moto refuses unsigned GETs, and presigned URLs differ per process).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.adapters.base import Adapter, Ctx, IterSpec, Unsupported
from bench.adapters.common import collate_dicts, cpu_map, identity

__all__ = ["WDSAdapter", "kind"]


def _encode(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"__key__": row["__key__"]}
    for k, v in row.items():
        if k == "__key__":
            continue
        if isinstance(v, np.ndarray):
            buf = io.BytesIO()
            np.save(buf, v)
            out[f"{k}.npy"] = buf.getvalue()
        elif isinstance(v, bytes):
            out[f"{k}.bin"] = v
        else:
            out[f"{k}.txt"] = str(int(v) if isinstance(v, bool) else v).encode()
    return out


def _decoder(types: dict[str, str]) -> Any:
    def decode(sample: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"__key__": sample["__key__"]}
        for col, kind in types.items():
            if kind == "bytes":
                out[col] = sample[f"{col}.bin"]
            elif kind == "npy":
                out[col] = np.load(io.BytesIO(sample[f"{col}.npy"]))
            elif kind == "int":
                out[col] = int(sample[f"{col}.txt"])
            elif kind == "float":
                out[col] = float(sample[f"{col}.txt"])
            else:
                out[col] = sample[f"{col}.txt"].decode()
        return out

    return decode


def kind(t: pa.DataType) -> str:
    if pa.types.is_binary(t):
        return "bytes"
    if pa.types.is_fixed_size_list(t):
        return "npy"
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    return "str"


class WDSAdapter(Adapter):
    name = "webdataset"
    public_objects = True

    def version(self) -> str:
        import webdataset

        return str(getattr(webdataset, "__version__", "1.0.2"))

    def ingest(self, table: pa.Table, out: Path) -> dict[str, Any]:
        import webdataset as wds

        from bench.adapters.mds import peer_rows

        rows = self.prepared if self.prepared is not None else peer_rows(table)
        out.mkdir(parents=True, exist_ok=True)
        limit = self.shard_bytes or 1 << 26
        with wds.ShardWriter(str(out / "shard-%06d.tar"), maxsize=limit,
                             verbose=0) as w:
            for r in rows:
                w.write(_encode(r))
        return {"format": "tar (uncompressed)", "shard_limit": "64 MiB"}

    def epoch(self, ctx: Ctx, spec: IterSpec) -> Iterable[Any]:
        import webdataset as wds

        if spec.mode == "full":
            raise Unsupported("WebDataset reads tars sequentially: no full shuffle")
        if spec.mix:
            raise Unsupported("mix not wired for WebDataset")
        types = {k: v for k, v in ctx.extra["kinds"].items() if k != "__key__"}
        names = sorted(p.name for p in ctx.local.glob("shard-*.tar"))
        if spec.cache == "cold":
            assert ctx.endpoint and ctx.s3_url
            base = ctx.endpoint + "/" + ctx.s3_url.removeprefix("s3://")
            urls = [f"pipe:curl -s -f {base}/{n}" for n in names]
        else:
            urls = [str(ctx.local / n) for n in names]
        shuffle = spec.mode == "windowed"
        ds = wds.WebDataset(urls, shardshuffle=100 if shuffle else False, seed=spec.seed,
                            nodesplitter=None, workersplitter=wds.split_by_worker,
                            empty_check=False)
        if shuffle:
            ds = ds.shuffle(spec.window, seed=spec.seed)
        ds = ds.map(_decoder(types))
        if spec.unit == "map":
            ds = ds.map(cpu_map)
        if spec.unit == "batch":
            ds = ds.batched(spec.batch_size, collation_fn=collate_dicts, partial=True)
        if spec.workers == 0:
            return ds
        import torch.utils.data as tud

        return tud.DataLoader(ds, batch_size=None, num_workers=spec.workers, collate_fn=identity)
