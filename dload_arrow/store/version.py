"""``Version``: what a commit returns (its id, size, and what it had to upload)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dload_arrow.sizes import format_bytes, plural
from dload_arrow.store.manifest import Manifest

__all__ = ["Version"]


@dataclass(frozen=True)
class Version:
    """A committed version: its id, size, and what the commit had to upload.

    ``bytes_uploaded`` counts shards, the key index and the manifest; the manifest's own
    share is ``manifest_bytes_uploaded`` (0 when a version of that id was stored already).
    """

    name: str
    version: str
    num_rows: int
    shards_total: int
    shards_uploaded: int
    bytes_total: int
    bytes_uploaded: int
    seconds: float
    manifest: Manifest = field(repr=False)
    manifest_bytes_uploaded: int = 0

    def __repr__(self) -> str:
        rows = f"{self.num_rows:,} row{'' if self.num_rows == 1 else 's'}"
        return (f"Version({self.name!r}, {self.version[:12]}, {rows} in "
                f"{plural(self.shards_total, 'shard')} of {format_bytes(self.bytes_total)}; "
                f"uploaded {plural(self.shards_uploaded, 'shard')}, "
                f"{format_bytes(self.bytes_uploaded)} in all, "
                f"in {self.seconds:.2f} s)")

    @property
    def num_bytes(self) -> int:
        """``bytes_total``: bytes of all the version's shards (as ``Dataset.num_bytes``)."""
        return self.bytes_total

    @property
    def num_shards(self) -> int:
        """``shards_total``: the version's shards (as ``Dataset.num_shards``)."""
        return self.shards_total
