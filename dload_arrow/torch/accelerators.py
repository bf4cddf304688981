"""Which devices this torch can put tensors on, and the checked device for ``to_device``.

A device type torch knows by name (``mps``, ``xpu``, ``hpu``) may still be missing from this
build or machine; torch then fails at the first copy, in the copy thread, with a message about
its build. Checking once, up front, names the device asked for and the ones that exist here.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from dload_arrow.errors import ConfigError

__all__ = ["available_devices", "resolve_device"]

_ALWAYS = ("cpu", "meta")  # every build has them (meta: shapes only, no data)


def _backend(kind: str) -> Any:
    """The torch module that answers ``is_available()`` / ``device_count()`` for ``kind``."""
    if kind == "mps":
        return torch.backends.mps if hasattr(torch.backends, "mps") else None
    return getattr(torch, kind, None)


def _count(kind: str) -> int:
    """How many ``kind`` devices this process can use (0: none, or torch cannot tell)."""
    backend = _backend(kind)
    try:
        if backend is None or not backend.is_available():
            return 0
        count = getattr(backend, "device_count", None) or getattr(torch, kind).device_count
        return int(count())
    except Exception:  # a half-present backend (not compiled in) is as good as absent
        return 0


def available_devices() -> list[str]:
    """The device names usable here, e.g. ``["cpu", "cuda:0", "cuda:1"]``."""
    kinds = ["cuda", "mps", "xpu"]
    accelerator = getattr(torch, "accelerator", None)
    current = accelerator.current_accelerator() if accelerator is not None else None
    if current is not None and current.type not in kinds:
        kinds.append(current.type)
    names = ["cpu"]
    for kind in kinds:
        names += [kind if kind == "mps" else f"{kind}:{i}" for i in range(_count(kind))]
    return names


def resolve_device(device: Any) -> torch.device:
    """``device`` as a torch.device that exists here; a missing CUDA falls back to the CPU
    with a warning, any other missing device is a ConfigError naming the available ones."""
    if isinstance(device, bool) or not isinstance(device, str | torch.device):
        raise ConfigError(f"to_device: device={device!r}: give a name such as 'cuda', "
                          "'cuda:1' or 'cpu', or a torch.device")
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ConfigError(f"to_device: device={device!r} is not a device name ({e}); give "
                          "'cuda', 'cuda:1' or 'cpu'") from e
    if dev.type in _ALWAYS:
        return dev
    count = _count(dev.type)
    if dev.type == "cuda" and count == 0:
        warnings.warn(f"to_device({str(dev)!r}): CUDA is not available here; the items stay "
                      "on the CPU", stacklevel=3)
        return torch.device("cpu")
    if count == 0 or (dev.index is not None and dev.index >= count):
        have = "no such device" if count == 0 else f"{count} {dev.type} device(s)"
        raise ConfigError(
            f"to_device: device={str(dev)!r} is not available here ({have}; this torch "
            f"{torch.__version__} can use {', '.join(available_devices())}): pass one of "
            "those, or install a torch build for this accelerator"
        )
    return dev
