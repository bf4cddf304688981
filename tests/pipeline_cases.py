"""Pipelines exercising every node, for the save/restore harness (tests/pipeline_harness.py).

Each case is a factory ``f(root) -> Pipeline`` importable by name, so a fresh process can
rebuild the same pipeline and restore a state into it. ``root`` holds the datasets made by
:func:`make_datasets` (three small versions with several shards and row groups).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import dload_arrow as dl
from dload_arrow import Dataset, Pipeline, Repository

ROWS = {"nums": 300, "letters": 120, "vecs": 90}


def open_repo(root: str) -> Repository:
    return Repository.open(os.path.join(root, "root"), cache_dir=os.path.join(root, "cache"),
                           cache_budget="unlimited")


def make_datasets(root: str) -> Repository:
    repo = open_repo(root)
    repo.commit("nums", [(f"n{i:04d}", {"x": i, "g": i % 7}) for i in range(ROWS["nums"])],
                row_group_size=400, shard_size=1500, progress=False)
    repo.commit("letters", [(f"l{i:04d}", {"x": 10_000 + i, "s": chr(97 + i % 26)})
                            for i in range(ROWS["letters"])],
                row_group_size=300, shard_size=1200, progress=False)
    repo.commit("vecs", [(f"v{i:04d}", {"x": 20_000 + i, "v": np.full(4, i, np.float32)})
                         for i in range(ROWS["vecs"])],
                row_group_size=600, shard_size=2500, progress=False)
    return repo


def ds(root: str, name: str = "nums") -> Dataset:
    return open_repo(root).dataset(name)


def view(root: str) -> Dataset:
    """A filtered view like ``where()`` makes: every other unit, rows with g == 2."""
    base = ds(root)
    units = [(s.index, rg) for s in base.manifest.shards for rg in range(len(s.rg_rows))]
    return Dataset(base.repo, base.manifest, predicate=pc.field("g") == 2, units=units[::2])


def xs(row: Any) -> Any:
    return row["x"]


def double(row: dict[str, Any]) -> dict[str, Any]:
    return {"x": row["x"] * 2, "key": row["__key__"]}


def add_col(batch: pa.RecordBatch) -> pa.RecordBatch:
    return batch.append_column("y", pc.multiply(batch.column("x"), 3))


def add_col_polars(batch: pa.RecordBatch) -> Any:
    import polars as pl

    return pl.from_arrow(batch).with_columns((pl.col("x") + 1).alias("x1"))


def odd(row: dict[str, Any]) -> bool:
    return row["x"] % 2 == 1


def twice(row: dict[str, Any]) -> list[int]:
    return [row["x"], -row["x"]]


def running_sum(acc: int, row: dict[str, Any]) -> tuple[int, int]:
    acc = acc + row["x"]
    return acc, acc


def gen(epoch: int) -> Iterator[int]:
    for i in range(50):
        yield i * 100 + epoch


class Counter:
    """A stateful iterator: the harness saves its own state, not a replay count."""

    def __init__(self, n: int) -> None:
        self.i, self.n = 0, n

    def __iter__(self) -> Counter:
        return self

    def __next__(self) -> int:
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i * 7

    def state_dict(self) -> dict[str, int]:
        return {"i": self.i}

    def load_state_dict(self, s: dict[str, int]) -> None:
        self.i = s["i"]


def counter_factory() -> Counter:
    return Counter(40)


def probs(row: float) -> list[float]:
    return [row, 1 - row]


CASES: dict[str, Callable[[str], Pipeline]] = {
    "from_sequence": lambda r: dl.from_iterable(list(range(37))),
    "from_generator": lambda r: dl.from_iterable(gen, chunk=3),
    "from_stateful": lambda r: dl.from_iterable(counter_factory, chunk=4),
    "random_stream": lambda r: dl.random_stream(5).take(30),
    "random_ints": lambda r: dl.random_stream(5, high=10, size=2).take(30).map(list),
    "dataset": lambda r: ds(r).pipeline(),
    "dataset_columns": lambda r: ds(r).pipeline(columns=["x"]).map(xs),
    "dataset_windowed": lambda r: ds(r).shuffle(40, seed=3).map(xs),
    "dataset_full": lambda r: ds(r).shuffle(full=True, seed=4).map(xs),
    "dataset_view": lambda r: view(r).shuffle(30, seed=1).map(xs),
    "tensor_batches": lambda r: ds(r, "vecs").shuffle(25, seed=2).batch(8).map(
        lambda b: (b["x"].tolist(), b["v"].sum(axis=1).tolist())),
    "map": lambda r: ds(r).map(double),
    "map_batches": lambda r: ds(r).map_batches(add_col, rows_preserved=True).map(
        lambda x: (x["x"], x["y"])),
    "map_batches_polars": lambda r: ds(r, "letters").map_batches(add_col_polars).map(
        lambda x: x["x1"]),
    "filter": lambda r: ds(r).filter(odd).map(xs),
    "filter_expr": lambda r: ds(r).filter(pc.field("g") < 3).map(xs),
    "flat_map": lambda r: ds(r, "letters").pipeline().flat_map(twice),
    "scan": lambda r: ds(r).pipeline().scan(running_sum, 0),
    "select_columns": lambda r: ds(r).pipeline().select(["x"]).map(xs),
    "batch": lambda r: ds(r).shuffle(50, seed=1).batch(16).map(lambda b: b["x"].tolist()),
    "batch_drop_last": lambda r: dl.from_iterable(list(range(41))).batch(8, drop_last=True),
    "unbatch": lambda r: ds(r).batch(7).unbatch().map(xs),
    "repeat": lambda r: ds(r, "letters").shuffle(20, seed=5).map(xs).repeat(2),
    "repeat_forever": lambda r: dl.from_iterable(list(range(5))).repeat().take(23),
    "take": lambda r: ds(r).shuffle(60, seed=6).map(xs).take(111),
    "skip": lambda r: ds(r).shuffle(60, seed=6).map(xs).skip(77),
    "shard_pushed": lambda r: ds(r).shuffle(40, seed=2).map(xs).shard(1, 3, block=4),
    "shard_batch": lambda r: ds(r).shuffle(40, seed=2).batch(5).shard(2, 3).map(
        lambda b: b["x"].tolist()),
    "shard_fallback": lambda r: ds(r).filter(odd).map(xs).shard(0, 2, block=3),
    "shard_then_skip": lambda r: ds(r).shuffle(40, seed=2).batch(4).shard(1, 3).skip(5).map(
        lambda b: b["x"].tolist()),
    "shard_mix": lambda r: dl.mix([ds(r).shuffle(30, seed=1), ds(r, "letters")], [0.6, 0.4],
                                  seed=8, stop="all").map(xs).shard(2, 3, block=2).skip(4),
    "buffer_shuffle": lambda r: dl.from_iterable(gen).shuffle(16, seed=9),
    "concat": lambda r: dl.concat([ds(r, "letters").map(xs), ds(r, "vecs").map(xs)]),
    "zip_with": lambda r: dl.zip_with([ds(r).map(xs), ds(r, "letters").map(xs)],
                                      lambda a, b: a + b),
    "mix": lambda r: dl.mix([ds(r), ds(r, "letters")], [0.7, 0.3], seed=1).map(xs),
    "mix_all": lambda r: dl.mix([ds(r).shuffle(50, seed=1), ds(r, "letters")], [0.5, 0.5],
                                seed=2, stop="all").map(xs),
    "mix_exact": lambda r: dl.mix([ds(r), ds(r, "letters"), ds(r, "vecs")], [0.5, 0.3, 0.2],
                                  seed=3, exact=True, stop="all").map(xs),
    "choice_stream": lambda r: dl.choice(
        [ds(r).map(xs), ds(r, "letters").map(xs)],
        dl.random_stream(7).map(probs), seed=4).take(200),
    "select": lambda r: dl.select(dl.random_stream(8, high=2).take(150),
                                  [ds(r).map(xs), ds(r, "letters").map(xs)]),
    "through": lambda r: ds(r).pipeline().through(lambda p: p.map(xs).take(10)),
    "chain": lambda r: dl.mix([ds(r).shuffle(64, seed=1).map(double),
                               ds(r, "letters").map(lambda x: {"x": x["x"], "key": "l"})],
                              [0.6, 0.4], seed=5).filter(lambda x: x["x"] % 3 != 0)
                     .batch(6).shard(0, 2),
}
