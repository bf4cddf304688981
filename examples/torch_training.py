"""Training with torch: a shuffled, batched pipeline in a DataLoader with worker processes,
a checkpoint in the middle of an epoch, and a resume with another number of workers.

Runs in seconds on the CPU (a GPU is used when present). Uses the configured root
(DLOAD_ROOT, a local directory by default).
"""

from __future__ import annotations

import numpy as np
import torch

from dload_arrow import Repository
from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device


def make_data(repo: Repository) -> None:
    rng = np.random.default_rng(0)
    samples = []
    for i in range(512):
        x = rng.normal(size=8).astype(np.float32)
        samples.append((f"s{i:05d}", {"x": x, "y": float(x.sum() > 0)}))
    repo.commit("toy-classify", samples, shard_size=8_000, row_group_size=2_000, progress=False)


def train(loader, model, opt, steps: int) -> list[str]:
    """A few optimizer steps; returns the keys the model saw."""
    seen: list[str] = []
    for batch in loader:
        logits = model(batch["x"]).squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen.extend(batch["__key__"])
        if len(seen) // 32 >= steps:
            break
    return seen


def main() -> None:
    repo = Repository.open()
    make_data(repo)
    # The pipeline: windowed shuffle, then batches of 32 (batch in the pipeline, not the loader).
    pipe = repo.dataset("toy-classify").shuffle(128, seed=0).batch(32)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    model = torch.nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    # Rank and world size come from torch.distributed or RANK / WORLD_SIZE (here: 0 of 1).
    ds = as_iterable_dataset(pipe)
    loader = to_device(StatefulLoader(ds, num_workers=2), device)
    first = train(loader, model, opt, steps=5)
    checkpoint = {"model": model.state_dict(), "data": loader.state_dict()}
    print("checkpoint after", len(first), "samples:", checkpoint["data"])

    # ... the job stops; a new one starts with another worker count and resumes exactly.
    ds2 = as_iterable_dataset(pipe)
    ds2.load_state_dict(checkpoint["data"])
    model.load_state_dict(checkpoint["model"])
    loader2 = to_device(StatefulLoader(ds2, num_workers=1), device)
    rest = train(loader2, model, opt, steps=1_000)

    seen = first + rest
    assert len(seen) == len(set(seen)) == 512, "every sample exactly once in the epoch"
    print("epoch 0 done:", len(seen), "samples, none twice; next state:", loader2.state_dict())


if __name__ == "__main__":
    main()
