"""dload_arrow through its public API only.

Ingest: ``Repository.open(root).commit(name, table)``. Read: ``ds.batches()`` /
``ds.samples()`` for sequential epochs, the pipeline API (``ds.shuffle(...)``, ``mix``,
``.batch``) for shuffled and mixed ones, and ``dload_arrow.torch.as_iterable_dataset`` with a
torch DataLoader for ``num_workers > 0``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.adapters.base import Adapter, Ctx, IterSpec, Unsupported
from bench.adapters.common import cpu_map, identity

__all__ = ["DloadAdapter", "DloadViewsAdapter"]


class DloadAdapter(Adapter):
    name = "dload_arrow"
    views = False  # binary and string columns as view types (DloadViewsAdapter)

    def version(self) -> str:
        import dload_arrow

        return str(dload_arrow.__version__)

    def ingest(self, table: pa.Table, out: Path) -> dict[str, Any]:
        from dload_arrow import Repository

        repo = Repository.open(out, cache_dir=out.parent / (out.name + ".cache"))
        kw: dict[str, Any] = {"shard_size": self.shard_bytes} if self.shard_bytes else {}
        v = repo.commit(self.dataset_name, table, progress=False, **kw)
        return {"shards": v.shards_total, "version": v.version[:12]}

    def preload(self, spec: IterSpec) -> None:
        # Imports are outside every figure. `import dload_arrow` loads only its errors (the
        # rest on first use, for a fast CLI start), so the modules an epoch uses are imported
        # here: the repository and read path (~0.1 s), the pipeline, and for cold cells the S3
        # client (s3fs, ~0.5 s; LitData imports boto3 with itself).
        import dload_arrow.pipeline
        import dload_arrow.read.reader
        import dload_arrow.repository

        if spec.cache == "cold":
            import s3fs  # noqa: F401

            import dload_arrow.storage.remote  # noqa: F401

    dataset_name = "data"

    def _repo(self, ctx: Ctx, spec: IterSpec, which: str = "a") -> Any:
        from dload_arrow import Repository

        budget = spec.cache_budget
        cache = ctx.cache_dir or (ctx.local.parent / "dload.cache")
        if spec.cache == "cold":
            url = ctx.s3_url if which == "a" else ctx.s3_url_b
            return Repository.open(url, endpoint_url=ctx.endpoint, cache_dir=cache,
                                   cache_budget=budget)
        root = ctx.local if which == "a" else ctx.local_b
        return Repository.open(root, cache_dir=cache, cache_budget=budget)

    def epoch(self, ctx: Ctx, spec: IterSpec) -> Iterable[Any]:
        ds = self._repo(ctx, spec).dataset(self.dataset_name)
        simple = (spec.mode == "sequential" and spec.workers == 0 and not spec.mix
                  and spec.unit != "map")
        if self.views and spec.unit != "batch":
            raise Unsupported("views=True changes record batches only (items are bytes/str)")
        if simple:
            return ds.batches(views=self.views) if spec.unit == "batch" else ds.samples()
        pipe = self._pipeline(ctx, spec, ds)
        if spec.unit == "map":
            pipe = pipe.map(cpu_map)
        if spec.workers == 0:
            # batch unit in process: the pipeline's own chunks (Arrow record batches)
            return pipe.iter_chunks() if spec.unit == "batch" else pipe
        if spec.unit == "batch":
            pipe = pipe.batch(spec.batch_size)
        import torch.utils.data as tud

        from dload_arrow.torch import as_iterable_dataset

        tds = as_iterable_dataset(pipe, to_tensors=False)
        return tud.DataLoader(tds, batch_size=None, num_workers=spec.workers,
                              collate_fn=identity)

    def _pipeline(self, ctx: Ctx, spec: IterSpec, ds: Any) -> Any:
        if not hasattr(ds, "shuffle") or not hasattr(ds, "pipeline"):
            raise Unsupported("dload_arrow pipelines (ds.shuffle / ds.pipeline) not landed yet")
        v = self.views
        if spec.mode == "sequential":
            pipe = ds.pipeline(views=v)
        elif spec.mode == "windowed":
            pipe = ds.shuffle(spec.window, seed=spec.seed, views=v)
        else:
            pipe = ds.shuffle(full=True, seed=spec.seed, views=v)
        if spec.mix:
            from dload_arrow.pipeline import mix

            b = self._repo(ctx, spec, "b").dataset(self.dataset_name)
            pipe_b = b.pipeline(views=v) if spec.mode == "sequential" else b.shuffle(
                spec.window, seed=spec.seed + 1, views=v)
            pipe = mix([pipe, pipe_b], weights=list(spec.mix), seed=spec.seed)
        return pipe

    def keys(self, item: Any, unit: str) -> Any:
        if unit == "sample":
            return int(item["__key__"])
        if isinstance(item, (pa.RecordBatch, pa.Table)):
            import pyarrow.compute as pc

            return pc.cast(item.column("__key__"), pa.int64()).to_numpy()
        if isinstance(item, list):  # a chunk of items
            return (int(x["__key__"]) for x in item)
        ks = item["__key__"]
        return (int(k) for k in ks)


class DloadViewsAdapter(DloadAdapter):
    """dload_arrow with ``views=True``: binary and string columns as Arrow view types, so a
    shuffled batch gathers 16-byte views instead of copying values. It reads dload_arrow's
    shards (no ingest of its own) and runs the batch cells only."""

    name = "dload_arrow-views"
    views = True
