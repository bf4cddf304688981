"""Token sequences for language models: packing for pre-training (rows of exactly N tokens,
no padding), length bucketing for fine-tuning (batches of similar lengths, little padding),
per-column pad values, and a checkpoint taken mid-row that resumes exactly.

Runs in seconds on a temporary root (or DLOAD_ROOT / DLOAD_CACHE_DIR when set).
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pyarrow as pa

import dload_arrow as dl

EOS = 0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(tmp)


def run(tmp: str) -> None:
    root = os.environ.get("DLOAD_ROOT") or os.path.join(tmp, "root")
    cache = os.environ.get("DLOAD_CACHE_DIR") or os.path.join(tmp, "cache")
    repo = dl.Repository.open(root, cache_dir=cache)
    rng = np.random.default_rng(0)
    docs = [(f"doc{i:05d}", {"input_ids": rng.integers(1, 32_000, int(n)).tolist(),
                             "labels": rng.integers(1, 32_000, int(n)).tolist()})
            for i, n in enumerate(rng.integers(5, 600, 2_000))]
    ids = pa.list_(pa.int32())
    repo.commit("corpus", docs, schema=pa.schema([("input_ids", ids), ("labels", ids)]),
                progress=False)
    corpus = repo.dataset("corpus")

    # Pre-training: documents end to end, an end-of-text id after each, rows of 1,024.
    packed = corpus.shuffle(seed=0).select(["input_ids"]).pack(1024, "input_ids",
                                                               separator=EOS)
    rows = 0
    for batch in packed.batch(8, collate=dl.pad_collate(pad_value={"input_ids_segment": -1})):
        rows += len(batch["input_ids"])
    tokens = sum(len(d["input_ids"]) + 1 for _, d in docs)
    print(f"packed {tokens:,} tokens into {rows} rows of 1,024 (the last one shorter)")

    # A checkpoint mid-row resumes exactly: the state is a cursor, not tokens.
    def pretraining() -> dl.Pipeline:
        return corpus.shuffle(seed=0).select(["input_ids"]).pack(1024, "input_ids",
                                                                 separator=EOS)

    it = iter(pretraining())  # epoch 0 of a new pipeline, as a job starts
    first = [next(it)["input_ids"] for _ in range(5)]
    state = json.loads(json.dumps(it.state_dict()))
    again = pretraining()  # the restarted job
    again.load_state_dict(state)
    rest = [r["input_ids"] for r in again]
    whole = [r["input_ids"] for r in pretraining()]  # one uninterrupted epoch 0
    assert all(np.array_equal(a, b) for a, b in zip(first + rest, whole, strict=True))
    print(f"resumed after 5 rows: {len(rest)} more, the same as one run; state {state}")

    # Fine-tuning: whole examples, batches of similar lengths, labels padded with -100.
    collate = dl.pad_collate(pad_value={"labels": -100}, mask=True)

    def padding(pipe: dl.Pipeline) -> float:
        real = total = 0
        for b in pipe:
            real += int(b["input_ids_length"].sum())
            total += b["input_ids"].size
        return 1 - real / total

    plain = padding(corpus.shuffle(seed=0).batch(16, collate=collate))
    bucketed = padding(corpus.shuffle(seed=0).bucket(16, "input_ids").batch(16, collate=collate))
    print(f"padding: {plain:.0%} without bucketing, {bucketed:.1%} with bucket(16)")
    assert bucketed < plain / 5


if __name__ == "__main__":
    main()
