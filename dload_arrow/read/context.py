"""What every reader of a root needs: the storage and this machine's cache settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dload_arrow.storage import Storage

if TYPE_CHECKING:
    from dload_arrow.read.cache import Cache

__all__ = ["ReadContext"]


@dataclass(frozen=True)
class ReadContext:
    """A root plus the local cache it streams through. Picklable (DataLoader workers)."""

    storage: Storage
    cache_dir: str
    cache_budget: str = "auto"

    @property
    def in_place(self) -> bool:
        """True for a local-directory root: shards are read where they are, not cached."""
        return bool(getattr(self.storage, "is_local", False))

    def cache(self) -> Cache:
        """This process's handle on the machine-wide cache (one per process and directory)."""
        from dload_arrow.read.cache import Cache

        return Cache.shared(self.cache_dir, self.cache_budget)
