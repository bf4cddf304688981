"""Catalog and exploration: SQL over manifests and samples, where() with pruning, lineage.

Runs in seconds against the configured root (DLOAD_ROOT, a local directory by default).
Results print through polars (installed with dload-arrow); ``.to_pandas()`` on any of these
tables works too once pandas is installed (``pip install 'dload-arrow[pandas]'``).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from dload_arrow import Repository

rng = np.random.default_rng(0)
n = 3000
table = pa.table({
    "__key__": [f"s{i:05d}" for i in range(n)],
    "label": pa.array(np.arange(n) // 300, pa.int64()),  # sorted: row groups hold few labels
    "score": rng.random(n),
    "split": np.where(np.arange(n) % 10 == 0, "val", "train"),
})

repo = Repository.open()
first = repo.commit("scores", table, row_group_size=6_000, progress=False)
repo.tag("scores", first.version, "v1")
repo.append("scores", table.slice(0, 100).set_column(
    0, "__key__", pa.array([f"t{i:05d}" for i in range(100)])), progress=False)

# --- SQL over the catalog: views of every manifest, ref and ref move -------------------------
print(pl.from_arrow(repo.sql("SELECT name, num_versions, num_rows, tags FROM datasets")))
print(pl.from_arrow(repo.sql("SELECT version[:12] AS version, num_rows, refs FROM versions "
                            "WHERE name = $name ORDER BY num_rows", name="scores")))

# --- SQL over samples: DuckDB reads the shards, parameters are bound --------------------------
hist = repo.sql(
    "SELECT label, count(*) AS n, avg(score) AS mean FROM samples('scores', 'v1') "
    "WHERE split = $split GROUP BY label ORDER BY label", split="train")
print(pl.from_arrow(hist))
assert hist.column("n").to_pylist() == [270] * 10

# --- where(): statistics skip row groups, then rows are filtered ------------------------------
ds = repo.dataset("scores", "v1")
view = ds.where("label IN (2, 7) AND score > 0.5")
print(view.pruning)
assert view.pruning["units_skipped"] > 0
rows = view.to_arrow()
assert rows.num_rows == repo.sql(
    "SELECT count(*) AS n FROM samples('scores', 'v1') WHERE label IN (2, 7) AND score > 0.5"
).column("n")[0].as_py()

# polars: a LazyFrame with projection and predicate pushdown, honouring the view
lazy = view.to_polars(columns=["score"])
print(lazy.select(pl.len(), pl.col("score").mean()).collect())
print(pl.from_arrow(ds.describe()))  # from manifest statistics, no data read
print(pl.from_arrow(ds.head(3)))

# --- lineage: parents, children, ref moves, shared shards --------------------------------------
print(repo.lineage("scores", "v1"))
