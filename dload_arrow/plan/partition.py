"""Deal an epoch's global output stream across ranks and workers: pure position arithmetic.

The epoch's stream ``S_0, S_1, ...`` (samples, or batches when the pipeline batches) is a pure
function of (sources, pipeline, seed, epoch). A :class:`Deal` says which global positions each
consumer (rank ``r`` of ``R``, DataLoader worker ``w`` of ``W``) delivers, starting at a global
position ``start`` (0, or where a checkpoint left off):

- rank-major: the item at ``start + k`` goes to rank ``k % R``;
- within a rank, its ``j``-th item goes to worker ``j % W``, so DataLoader's round-robin over
  its workers (``batch_size=None``) reproduces the rank's stream exactly, whatever ``W`` is;
- so consumer ``c = r + w * R`` of ``R * W`` delivers ``start + c, start + c + R*W, ...``.

Ranks that advance in lockstep (DDP) have together consumed a prefix of the stream, so a
checkpoint is one number, the global position ``P = start + n * R`` after each rank consumed
``n`` items, and resuming at any other ``(R', W')`` from ``P`` delivers ``S_P, S_{P+1}, ...``.

Equal-length rank streams (what DDP needs) when ``R`` does not divide the ``M`` remaining
items: ``uneven="pad"`` appends ``ceil(M/R)*R - M`` items that repeat the epoch's first items
(``S_0, S_1, ...``); ``"drop"`` drops the last ``M % R`` items; ``"none"`` leaves ranks unequal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dload_arrow.errors import ConfigError

__all__ = ["UNEVEN_MODES", "Deal", "Uneven", "position_after"]

Uneven = Literal["pad", "drop", "none"]
UNEVEN_MODES: tuple[str, ...] = ("pad", "drop", "none")


def position_after(start: int, consumed_per_rank: int, world_size: int) -> int:
    """The global position once every one of ``world_size`` ranks consumed that many items."""
    if start < 0 or consumed_per_rank < 0 or world_size < 1:
        raise ConfigError(
            f"position_after(start={start}, consumed_per_rank={consumed_per_rank}, "
            f"world_size={world_size}): counts must be >= 0 and world_size >= 1"
        )
    return start + consumed_per_rank * world_size


@dataclass(frozen=True)
class Deal:
    """Which global positions each (rank, worker) consumer delivers in one epoch.

    Args:
        world_size: ranks ``R`` (>= 1).
        num_workers: DataLoader workers per rank ``W``; 0 (the main process) counts as 1.
        start: global position the deal starts at (a checkpoint's position).
        total: the epoch's length ``N`` if known; needed for ``"pad"`` / ``"drop"`` when
            ``world_size > 1``.
        uneven: ``"pad"``, ``"drop"`` or ``"none"`` (see the module docstring).
    """

    world_size: int = 1
    num_workers: int = 1
    start: int = 0
    total: int | None = None
    uneven: Uneven = "pad"

    def __post_init__(self) -> None:
        if self.world_size < 1:
            raise ConfigError(f"world_size={self.world_size}: must be >= 1")
        if self.num_workers < 0:
            raise ConfigError(f"num_workers={self.num_workers}: must be >= 0")
        if self.start < 0:
            raise ConfigError(f"start={self.start}: a stream position must be >= 0")
        if self.total is not None and self.total < 0:
            raise ConfigError(f"total={self.total}: an epoch length must be >= 0")
        if self.uneven not in UNEVEN_MODES:
            raise ConfigError(f"uneven={self.uneven!r}: choose one of {UNEVEN_MODES}")
        if self.needs_total and self.total is None:
            raise ConfigError(
                f"uneven={self.uneven!r} with world_size={self.world_size} needs the epoch's "
                "length (total=); pass uneven='none' or make the length known"
            )

    @property
    def workers(self) -> int:
        """Consumers per rank (``num_workers``, with 0 counted as the main process)."""
        return max(self.num_workers, 1)

    @property
    def consumers(self) -> int:
        """``R * W``: the number of interleaved consumer streams."""
        return self.world_size * self.workers

    @property
    def needs_total(self) -> bool:
        return self.world_size > 1 and self.uneven != "none"

    def consumer(self, rank: int, worker: int) -> int:
        """The consumer index ``rank + worker * R`` (what ``pipe.shard(index, count)`` gets)."""
        if not 0 <= rank < self.world_size:
            raise ConfigError(f"rank={rank}: must be in [0, {self.world_size})")
        if not 0 <= worker < self.workers:
            raise ConfigError(f"worker={worker}: must be in [0, {self.workers})")
        return rank + worker * self.world_size

    @property
    def remaining(self) -> int | None:
        """Real items left from ``start`` (``N - start``, at least 0), or None if unknown."""
        if self.total is None:
            return None
        return max(self.total - self.start, 0)

    @property
    def rank_length(self) -> int | None:
        """Items each rank delivers from ``start`` on (the longest rank's, for ``"none"``)."""
        m = self.remaining
        if m is None:
            return None
        r = self.world_size
        if self.uneven == "drop":
            return m // r
        return -(-m // r)

    @property
    def end(self) -> int | None:
        """One past the last global position dealt (beyond ``total`` means padding)."""
        if self.total is None:
            return None
        if self.uneven == "none" or self.world_size == 1:
            return max(self.total, self.start)
        length = self.rank_length
        assert length is not None
        return self.start + length * self.world_size

    def positions(self, rank: int, worker: int) -> range:
        """Global positions delivered by one consumer, in order (needs a known end)."""
        end = self.end
        if end is None:
            raise ConfigError("positions() needs the epoch's length (total=)")
        c = self.consumer(rank, worker)
        return range(self.start + c, end, self.consumers)

    def rank_positions(self, rank: int) -> range:
        """Global positions delivered by one rank, in order (what its DataLoader yields)."""
        end = self.end
        if end is None:
            raise ConfigError("rank_positions() needs the epoch's length (total=)")
        return range(self.start + rank, end, self.world_size)

    def source_index(self, position: int) -> int:
        """The stream index an (possibly padding) position delivers: ``S_{i - N}`` cyclically."""
        if self.total is None or position < self.total:
            return position
        if self.total == 0:
            raise ConfigError("an empty epoch has nothing to pad with")
        return (position - self.total) % self.total

    def padding(self, rank: int, worker: int) -> np.ndarray:
        """Stream indices this consumer delivers as padding, after its real items."""
        end = self.end
        if end is None or self.total is None or end <= self.total:
            return np.zeros(0, dtype=np.int64)
        pos = np.asarray(self.positions(rank, worker), dtype=np.int64)
        pad = pos[pos >= self.total]
        return (pad - self.total) % max(self.total, 1)

    def real_count(self, rank: int, worker: int) -> int | None:
        """How many real (non-padding) items this consumer takes from its shard."""
        end = self.end
        if end is None:
            return None
        assert self.total is not None
        return len(range(self.start + self.consumer(rank, worker), min(end, self.total),
                         self.consumers))

    def position_after(self, consumed_per_rank: int) -> int:
        """The global position once each rank consumed ``consumed_per_rank`` items of this deal."""
        return position_after(self.start, consumed_per_rank, self.world_size)
