"""A tiny training loop for `dload demo`: a linear classifier on a batched stream.

It lives here because only ``dload_arrow.torch`` imports torch; the CLI calls it.
"""

from __future__ import annotations

from typing import Any

import torch

from dload_arrow.errors import ConfigError
from dload_arrow.torch.dataset import as_iterable_dataset

__all__ = ["train_linear"]


def train_linear(
    pipe: Any, *, steps: int, x: str, y: str, num_classes: int, lr: float = 0.05
) -> dict[str, Any]:
    """Train ``Linear(features, num_classes)`` for ``steps`` batches of ``pipe``.

    Args:
        pipe: a pipeline yielding batches (dicts of column -> array).
        steps: batches to train on.
        x: the feature column (any numeric shape; flattened per sample, scaled by 1/255).
        y: the integer label column.
        num_classes: number of classes.
        lr: plain SGD step size (torch.optim is avoided: it imports torch._dynamo, ~9 s).

    Returns:
        steps run, samples seen, first and last loss.
    """
    torch.manual_seed(0)
    model: torch.nn.Linear | None = None
    losses: list[float] = []
    seen = 0
    for step, batch in enumerate(as_iterable_dataset(pipe)):
        if step >= steps:
            break
        labels = torch.as_tensor(batch[y]).long()
        feats = torch.as_tensor(batch[x]).reshape(len(labels), -1).float() / 255.0
        if model is None:
            model = torch.nn.Linear(feats.shape[1], num_classes)
        loss = torch.nn.functional.cross_entropy(model(feats), labels)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.add_(p.grad, alpha=-lr)
        losses.append(round(loss.item(), 4))
        seen += len(labels)
    if not losses:
        raise ConfigError("the stream yielded no batches to train on")
    return {"steps": len(losses), "samples": seen, "first_loss": losses[0],
            "last_loss": losses[-1]}
