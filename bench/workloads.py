"""Benchmark workloads: deterministic Arrow tables generated from a fixed seed.

Every system ingests the same rows. Keys are zero-padded row numbers, so a key names the
sample's position in the dataset and an epoch's key order is its sample order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["WORKLOADS", "Workload", "generate", "get", "key_of", "rows"]

SEED = 20261130
KEY_WIDTH = 9
SEQ = 2048
MIX_B_BASE = 100_000_000


@dataclass(frozen=True)
class Workload:
    """A dataset shape and its full / quick sizes."""

    name: str
    kind: str  # image | tabular | tokens
    rows: int
    quick_rows: int
    description: str
    seed: int = SEED
    key_base: int = 0  # keys start here (the mix's second dataset: tell its samples apart)

    def n(self, quick: bool) -> int:
        return self.quick_rows if quick else self.rows


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload("image", "image", 100_000, 5_000,
                 "~10 KB binary (half random, half repetitive), int label, small JSON string"),
        Workload("tabular", "tabular", 1_000_000, 50_000,
                 "10 columns: 5 numeric (int64, int32, float64, float32, bool), 4 strings, label"),
        Workload("tokens", "tokens", 50_000, 2_500, "int32 lists of 2,048 tokens (8 KiB)"),
        Workload("mix_b", "image", 50_000, 2_500,
                 "second image-like dataset for the 0.7/0.3 mix", seed=SEED + 1,
                 key_base=MIX_B_BASE),
    ]
}


def get(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise SystemExit(f"unknown workload {name!r}: choose one of {sorted(WORKLOADS)}") from None


def key_of(i: int) -> str:
    return f"{i:0{KEY_WIDTH}d}"


def _keys(start: int, n: int) -> pa.Array:
    return pa.array([key_of(i) for i in range(start, start + n)], pa.string())


def _image(rng: np.random.Generator, start: int, n: int) -> pa.RecordBatch:
    sizes = rng.integers(9_216, 11_264, n)
    blobs = []
    for j, size in enumerate(sizes):
        if (start + j) % 2 == 0:
            blobs.append(rng.bytes(int(size)))
        else:  # repetitive: a short random motif repeated (compresses well)
            motif = rng.bytes(64)
            blobs.append((motif * (int(size) // 64 + 1))[: int(size)])
    labels = rng.integers(0, 1000, n)
    metas = [
        json.dumps({"w": 64, "h": 48, "src": f"cam{int(x) % 7}", "q": round(float(x) / 1000, 3)})
        for x in rng.integers(0, 1000, n)
    ]
    return pa.RecordBatch.from_arrays(
        [_keys(start, n), pa.array(blobs, pa.binary()), pa.array(labels, pa.int64()),
         pa.array(metas, pa.string())],
        schema=pa.schema([pa.field("__key__", pa.string(), nullable=False),
                          ("image", pa.binary()), ("label", pa.int64()), ("meta", pa.string())]),
    )


_WORDS = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
                   "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi"])


def _tabular(rng: np.random.Generator, start: int, n: int) -> pa.RecordBatch:
    cols = {
        "i64": pa.array(rng.integers(0, 2**40, n)),
        "i32": pa.array(rng.integers(-2**20, 2**20, n).astype(np.int32)),
        "f64": pa.array(rng.standard_normal(n)),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "flag": pa.array(rng.random(n) < 0.5),
        "city": pa.array(_WORDS[rng.integers(0, 16, n)].tolist(), pa.string()),
        "word": pa.array(_WORDS[rng.integers(0, 16, n)].tolist(), pa.string()),
        "code": pa.array([f"c{x:05d}" for x in rng.integers(0, 99_999, n)], pa.string()),
        "note": pa.array([f"row {start + j} of the table" for j in range(n)], pa.string()),
        "label": pa.array(rng.integers(0, 10, n)),
    }
    batch = pa.RecordBatch.from_pydict(cols)
    return batch.add_column(0, pa.field("__key__", pa.string(), nullable=False),
                            _keys(start, n))


def _tokens(rng: np.random.Generator, start: int, n: int) -> pa.RecordBatch:
    toks = rng.integers(0, 50_257, (n, SEQ), dtype=np.int32)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(toks.reshape(-1)), SEQ)
    schema = pa.schema([pa.field("__key__", pa.string(), nullable=False),
                        pa.field("tokens", arr.type, metadata={b"dload.shape": b"[2048]"})])
    return pa.RecordBatch.from_arrays([_keys(start, n), arr], schema=schema)


def generate(w: Workload, n: int, chunk: int = 5_000) -> Iterator[pa.RecordBatch]:
    """The workload's rows as record batches of ``chunk`` rows (deterministic in the seed)."""
    make = {"image": _image, "tabular": _tabular, "tokens": _tokens}[w.kind]
    rng = np.random.default_rng(w.seed)
    for start in range(0, n, chunk):
        b = make(rng, start, min(chunk, n - start))
        if w.key_base:
            b = b.set_column(0, b.schema.field(0), _keys(w.key_base + start, b.num_rows))
        yield b


def rows(w: Workload, n: int) -> pa.Table:
    return pa.Table.from_batches(list(generate(w, n)))
