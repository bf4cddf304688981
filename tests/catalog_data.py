"""Small datasets with a known history, for the catalog, SQL, where() and exploration tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dload_arrow import Repository

__all__ = ["History", "make_history", "make_table"]


def make_table(n: int, start: int = 0, prefix: str = "k", seed: int = 0) -> pa.Table:
    """``n`` rows: sorted keys, label = i // 50 (so row groups have narrow label ranges),
    a score in [0, 1), a nullable string tag, a bool flag and a small tensor column."""
    rng = np.random.default_rng(seed)
    i = np.arange(start, start + n)
    tags = np.array(["cat", "dog", "eel", "fox"])[i % 4].astype(object)
    tags[i % 9 == 0] = None
    vecs = rng.normal(size=(n, 3)).astype(np.float32)
    return pa.table({
        "__key__": [f"{prefix}{j:06d}" for j in i],
        "label": pa.array(i // 50, pa.int64()),
        "score": pa.array(rng.random(n)),
        "tag": pa.array(list(tags), pa.string()),
        "flag": pa.array(i % 3 == 0),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), 3),
    })


@dataclass(frozen=True)
class History:
    """``a``: v1 (commit, tagged ``v1``) -> v2 (append); ``b`` derived from a@v2; ``c`` derived
    from b. Shards of a@v1 are shared by a@v2."""

    a1: str
    a2: str
    b: str
    c: str


def make_history(repo: Repository, rows: int = 400) -> History:
    """Commit the :class:`History` datasets with several small row groups per shard."""
    small = {"progress": False, "row_group_size": 2_000, "shard_size": 12_000}
    a1 = repo.commit("a", make_table(rows), meta={"source": "test"}, **small).version
    repo.tag("a", a1, "v1")
    a2 = repo.append("a", make_table(rows // 4, start=rows), progress=False).version
    b = repo.commit(
        "b", make_table(rows // 2), **small,
        parents=[{"name": "a", "version": a2, "relation": "derive", "fingerprint": "f" * 16}],
    ).version
    c = repo.commit(
        "c", make_table(rows // 4), **small,
        parents=[{"name": "b", "version": b, "relation": "derive"}],
    ).version
    return History(a1=a1, a2=a2, b=b, c=c)
