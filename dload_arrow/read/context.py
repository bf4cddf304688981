"""What every reader of a root needs: the storage and this machine's cache settings."""

from __future__ import annotations

from dataclasses import dataclass

from dload_arrow.storage import Storage

__all__ = ["ReadContext"]


@dataclass(frozen=True)
class ReadContext:
    """A root plus the local cache it streams through. Picklable (DataLoader workers)."""

    storage: Storage
    cache_dir: str
    cache_budget: str = "auto"
