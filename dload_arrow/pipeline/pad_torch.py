"""``pad_collate`` as a torch DataLoader's ``collate_fn``: the rows' tensors in as numpy
arrays (refusing what numpy cannot hold, or a tensor off the CPU), the batch out as tensors."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from dload_arrow.errors import ConfigError

__all__ = ["as_tensors", "torch_rows"]


def torch_rows(rows: list[Any]) -> list[dict[str, Any]] | None:
    """The rows with their tensors (lists of tensors too: rows of frames) as numpy arrays
    when they hold any (pad_collate as a torch DataLoader's collate_fn: the batch is then
    tensors too), else None. A tensor off the CPU is refused: collate there, then move."""
    torch = sys.modules.get("torch")
    if torch is None or not any(isinstance(v, torch.Tensor) or (
            isinstance(v, list | tuple) and v and isinstance(v[0], torch.Tensor))
            for x in rows for v in x.values()):
        return None

    def arr(k: str, v: Any) -> Any:
        if isinstance(v, list | tuple) and v and isinstance(v[0], torch.Tensor):
            return [arr(k, t) for t in v]
        if not isinstance(v, torch.Tensor):
            return v
        if v.device.type != "cpu" or v.dtype == torch.bfloat16:
            raise ConfigError(f"pad_collate: column {k!r} holds a {v.dtype} tensor on "
                              f"{v.device}; collate CPU tensors numpy can hold (a map with "
                              ".float() for bfloat16) and move the batch after (to_device)")
        return v.detach().numpy()

    return [{k: arr(k, v) for k, v in x.items()} for x in rows]


def as_tensors(v: Any, torch: Any) -> Any:
    """numpy arrays as tensors, inside lists too (a column left as lists of rows)."""
    if isinstance(v, np.ndarray):
        return torch.from_numpy(v)
    return [as_tensors(x, torch) for x in v] if isinstance(v, list) else v
