"""Shuffle quality of an epoch's order, beside its uniform-random references.

Uses ``dload_arrow.stats.shuffle_quality`` when the package provides it; otherwise computes the
same three figures here:

- displacement: mean |position - index| / N (uniform shuffle: 1/3; in order: 0);
- same-block adjacency: fraction of consecutive samples from the same block, where the
  dataset is cut into 64 equal contiguous blocks (a stand-in for "same shard" that is the same
  for every system; uniform: 1/64 = 0.016; in order: ~1);
- rank correlation: Spearman's rho between position and index (uniform: ~0; in order: 1);
- mix score: mean |index jump| between consecutive samples / (N/3) (uniform: 1.0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BLOCKS", "quality"]

BLOCKS = 64


def quality(order: np.ndarray, n: int | None = None) -> dict[str, Any]:
    order = np.asarray(order, dtype=np.int64)
    n = n or (int(order.max()) + 1 if len(order) else 0)
    if len(order) < 2:
        return {}
    pos = np.arange(len(order))
    block = order * BLOCKS // max(n, 1)
    ranks = np.empty(len(order))
    ranks[np.argsort(order, kind="stable")] = np.arange(len(order))
    rho = float(np.corrcoef(pos, ranks)[0, 1]) if len(order) > 2 else 1.0
    out: dict[str, Any] = {
        "displacement": float(np.mean(np.abs(pos - ranks)) / len(order)),
        "same_block_adjacency": float(np.mean(block[1:] == block[:-1])),
        "rank_correlation": rho,
        "mix_score": float(np.mean(np.abs(np.diff(order))) / (n / 3)),
        "unique": len(np.unique(order)),
        "delivered": len(order),
    }
    try:  # the package's own measure (dload_arrow.stats), with z-scores vs uniform
        from dload_arrow.stats import shuffle_quality

        if order.min() >= 0 and order.max() < n:
            shard_of = np.arange(n) * BLOCKS // n
            out["package"] = shuffle_quality(order, n, shard_of=shard_of).to_dict()
    except Exception as e:
        out["package_error"] = f"{type(e).__name__}: {e}"[:200]
    return out
