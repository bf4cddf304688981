"""From WebDataset shards to padded token batches: the path a team porting from WebDataset,
MosaicML streaming or LitData takes.

1. A folder of tar shards (``wds-000000.tar`` ...) of ``<key>.txt`` + ``<key>.cls`` groups
   is committed as one dataset, the same as ``dload commit corpus --from shards/``.
2. Documents are tokenized on the fly (a toy tokenizer here) and the variable-length token
   lists are padded per batch by ``dl.pad_collate``.
3. A mid-epoch checkpoint resumes exactly.

Runs on the embedded default root (a local directory) or wherever DLOAD_ROOT points:

    python examples/webdataset_shards.py
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from pathlib import Path

import numpy as np

import dload_arrow as dl
from dload_arrow.ingest import open_source


def write_shards(folder: Path, shards: int, per_shard: int) -> None:
    """WebDataset-style tar shards: each sample's files side by side."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    words = ["the", "data", "loader", "reads", "shards", "in", "order", "fast"]
    for s in range(shards):
        with tarfile.open(folder / f"wds-{s:06d}.tar", "w") as tf:
            for j in range(per_shard):
                key = f"{s * per_shard + j:06d}"
                text = " ".join(rng.choice(words, rng.integers(3, 12)))
                for name, data in ((f"{key}.txt", text.encode()),
                                   (f"{key}.cls", str(j % 4).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tf.addfile(info, io.BytesIO(data))


def tokenize(sample: dict) -> dict:
    """A toy tokenizer: one id per word (a real one: a tokenizer's encode)."""
    ids = [sum(map(ord, w)) % 1000 + 1 for w in sample["txt"].split()]
    return {"__key__": sample["__key__"], "tokens": ids, "label": sample["cls"]}


def main() -> None:
    repo = dl.Repository.open()
    with tempfile.TemporaryDirectory() as tmp:
        shards = Path(tmp) / "shards"
        write_shards(shards, shards=4, per_shard=25)

        # 1. The folder of shards is one source: every archive's samples, in name order.
        src = open_source(shards)
        print(f"{len(src)} samples in 4 shards; columns {src.schema.names}")
        v = repo.commit("example-corpus", src.reader(), progress=False)
        print(f"committed {v.num_rows} samples as example-corpus@{v.version[:12]}")

    # 2. Shuffled batches of padded token ids, with each row's length and a mask.
    pipe = (repo.dataset("example-corpus").pipeline().shuffle(seed=0).map(tokenize)
            .batch(8, collate=dl.pad_collate(pad_value=0, columns=["tokens"], mask=True)))
    it = iter(pipe)
    first = next(it)
    print("tokens", first["tokens"].shape, "lengths", first["tokens_length"].tolist())
    state = json.dumps(pipe.state_dict())  # a checkpoint after one batch: small JSON

    # 3. Resume in a new pipeline (a restarted job): the rest of the epoch, each sample once.
    resumed = (repo.dataset("example-corpus").pipeline().shuffle(seed=0).map(tokenize)
               .batch(8, collate=dl.pad_collate(pad_value=0, columns=["tokens"], mask=True)))
    resumed.load_state_dict(json.loads(state))
    keys = list(first["__key__"]) + [k for b in resumed for k in b["__key__"]]
    assert sorted(keys) == sorted(s["__key__"] for s in repo.dataset("example-corpus"))
    print(f"resumed: {len(keys)} samples in the epoch, each once")


if __name__ == "__main__":
    main()
