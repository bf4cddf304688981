"""Torch adapter: exact, elastic, resumable streaming into DataLoaders and onto the GPU.

The only package of dload_arrow that imports torch (``pip install 'dload-arrow[torch]'``).
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "dload_arrow.torch needs PyTorch: pip install 'dload-arrow[torch]'"
    ) from e

from dload_arrow.torch.dataset import StreamDataset, as_iterable_dataset, resolve_rank
from dload_arrow.torch.device import DeviceLoader, to_device
from dload_arrow.torch.loader import StatefulLoader
from dload_arrow.torch.tensors import collate, column_to_tensor, sample_to_torch, to_torch

__all__ = [
    "DeviceLoader",
    "StatefulLoader",
    "StreamDataset",
    "as_iterable_dataset",
    "collate",
    "column_to_tensor",
    "resolve_rank",
    "sample_to_torch",
    "to_device",
    "to_torch",
]
