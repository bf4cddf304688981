"""Pipelines: shuffle two datasets, mix them 70/30, batch, checkpoint and resume, derive;
a full shuffle that cannot fit in memory.

Runs in seconds on a temporary root (or DLOAD_ROOT / DLOAD_CACHE_DIR when set).
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

import dload_arrow as dl
from dload_arrow.stats import shuffle_quality


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(tmp)


def run(tmp: str) -> None:
    root = os.environ.get("DLOAD_ROOT") or os.path.join(tmp, "root")
    cache = os.environ.get("DLOAD_CACHE_DIR") or os.path.join(tmp, "cache")
    repo = dl.Repository.open(root, cache_dir=cache, cache_budget="unlimited")

    def pixels(i: int) -> np.ndarray:
        return np.random.default_rng(i).integers(0, 255, 16, dtype=np.uint8)

    repo.commit("images", [(f"img{i:05d}", {"label": i % 10, "pixels": pixels(i)})
                           for i in range(3000)], shard_size=16_000, row_group_size=4_000,
                progress=False)
    repo.commit("captions", [(f"cap{i:05d}", {"label": -1, "pixels": np.zeros(16, np.uint8)})
                             for i in range(1000)], shard_size=20_000, progress=False)
    images, captions = repo.dataset("images"), repo.dataset("captions")

    # A windowed shuffle: shard order, row-group order and rows within ~500-row windows.
    shuffled = images.shuffle(500, seed=0)
    print("check before reading:\n" + str(shuffled.check()))
    q = shuffle_quality(shuffled.order_array(0), shard_of=shuffled.shard_ids())
    print(q)
    # A window holds a few hundred rows, not the dataset: rows stay near their shard-mates,
    # so adjacency and rank correlation are far from uniform. A full shuffle meets them.
    print("a windowed shuffle trades quality for memory; a full shuffle, for contrast:")
    full = images.shuffle(full=True, seed=0)
    print(shuffle_quality(full.order_array(0), shard_of=full.shard_ids()))

    # Mix 70/30 (deterministic in seed and epoch), then batch.
    pipe = dl.mix([shuffled, captions.shuffle(full=True, seed=1)], [0.7, 0.3], seed=42)
    pipe = pipe.map(lambda r: {"label": r["label"], "pixels": r["pixels"]}).batch(64)

    it = iter(pipe)
    first = [next(it) for _ in range(5)]
    state = json.dumps(pipe.state_dict())  # a small cursor, not data
    print(f"checkpoint after 5 batches: {len(state)} bytes of JSON")
    rest = list(it)

    resumed = dl.mix([images.shuffle(500, seed=0), captions.shuffle(full=True, seed=1)],
                     [0.7, 0.3], seed=42)
    resumed = resumed.map(lambda r: {"label": r["label"], "pixels": r["pixels"]}).batch(64)
    resumed.load_state_dict(json.loads(state))
    again = list(resumed)
    assert len(again) == len(rest)
    assert all(np.array_equal(a["label"], b["label"]) for a, b in zip(again, rest, strict=True))
    share = np.mean(np.concatenate([b["label"] for b in first + rest]) == -1)
    print(f"resumed exactly; captions share {share:.3f} (weight 0.3)")

    # Two consumers of the same stream (torch ranks/workers do this): an exact partition.
    parts = [list(images.pipeline().map(lambda r: r["label"]).shard(i, 2, block=8))
             for i in range(2)]
    assert sum(len(p) for p in parts) == 3000

    # views=True: binary and string columns (here the keys) come out as Arrow view types, so
    # a shuffled batch gathers 16-byte views instead of copying each value: same rows, order.
    chunk = next(iter(images.shuffle(500, seed=0, views=True).iter_chunks()))
    print(f"views=True: __key__ is {chunk.schema.field('__key__').type}")
    keys = [r["__key__"] for r in images.shuffle(500, seed=0, views=True)]
    assert keys == [r["__key__"] for r in images.shuffle(500, seed=0)]

    # A full shuffle holds its rows decoded: it measures the first row group and stops with
    # the numbers and the fixes when they cannot fit in memory (DLOAD_MEMORY_LIMIT overrides
    # what the machine or its cgroup reports; here it stands in for a small machine).
    before = os.environ.get("DLOAD_MEMORY_LIMIT")
    os.environ["DLOAD_MEMORY_LIMIT"] = "100KB"
    try:
        next(iter(images.shuffle(full=True, seed=3)))
        raise AssertionError("3,000 rows cannot fit in 100 KB")
    except dl.InfeasiblePlanError as e:
        print("full shuffle refused:", str(e).split(". Fixes")[0])
    finally:
        if before is None:
            del os.environ["DLOAD_MEMORY_LIMIT"]
        else:
            os.environ["DLOAD_MEMORY_LIMIT"] = before

    # Derive: run once, commit, memoized by the pipeline's fingerprint.
    v1 = repo.derive("evens", images.filter(lambda r: r["label"] % 2 == 0))
    v2 = repo.derive("evens", images.filter(lambda r: r["label"] % 2 == 0))
    assert v1.version == v2.version
    print(f"derived 'evens' {v1.version[:12]} ({v1.num_rows} rows), parents "
          f"{[p['name'] for p in repo.dataset('evens').parents]}")


if __name__ == "__main__":
    main()
