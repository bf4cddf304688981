"""Streaming basics: batches, samples, random access, read plans and the cache.

Runs in seconds. The first part uses the configured root (DLOAD_ROOT, a local directory by
default), which is read in place. The second part streams an in-memory "remote" root through
a cache whose budget is a tenth of the dataset, to show the window sliding over it.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from dload_arrow import InfeasiblePlanError, Repository

samples = [
    (f"img-{i:04d}", {"label": i % 10, "pixels": np.full((4, 4), i % 256, dtype=np.uint8),
                      "jpeg": os.urandom(64)})
    for i in range(2000)
]

# --- a local root: read in place ------------------------------------------------------------
repo = Repository.open()
repo.commit("digits", samples, shard_size=20_000, row_group_size=4_000, progress=False)
ds = repo.dataset("digits")
print(ds, ds.plan())

rows = sum(batch.num_rows for batch in ds.batches(columns=["label"]))  # pyarrow RecordBatches
first = next(ds.samples())  # dicts: __key__, label, pixels (4x4 numpy), jpeg (bytes)
print(rows, first["__key__"], first["pixels"].shape, type(first["jpeg"]).__name__)

print(ds[-1]["__key__"], ds.get("img-0042")["label"])  # one row group read, not a shard
print(ds.take(["img-0007", 3], columns=["label"]).to_pylist())

# --- a remote root through a cache ten times smaller than the dataset ------------------------
remote = "memory://streaming-basics"
Repository.open(remote).commit("digits", samples, shard_size=6_000, row_group_size=2_000,
                               progress=False)
size = Repository.open(remote).dataset("digits").num_bytes
with tempfile.TemporaryDirectory() as cache_dir:
    small = Repository.open(remote, cache_dir=cache_dir, cache_budget=size // 10)
    view = small.dataset("digits")
    print(view.plan())  # window of shards sized from the budget
    seen = sum(1 for _ in view.samples(columns=["label"]))
    assert seen == len(samples)
    print(small.cache_status())

    try:
        view.plan(full_shuffle=True).check()  # the whole dataset cannot be resident
    except InfeasiblePlanError as e:
        print("refused before any download:", str(e).split(". Fixes")[0])
