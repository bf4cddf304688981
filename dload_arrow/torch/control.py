"""The epoch plan shared between the main process and its DataLoader workers.

Workers hold copies of the dataset made when they started; persistent workers keep them for
the whole run. ``set_epoch`` and ``load_state_dict`` happen in the main process, so the plan
(epoch, start position) travels through a small block of shared memory that every worker reads
when an iteration begins: no copy can go stale.

Epochs advance by themselves: each worker slot counts the iterations it began since the plan
was last set, and a worker's epoch is ``plan epoch + that count``. Every worker id takes part in
every iteration of a DataLoader, so all workers agree on the epoch without talking to each
other.
"""

from __future__ import annotations

import multiprocessing.sharedctypes
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_WORKERS", "Control", "Plan"]

MAX_WORKERS = 256
_GEN, _EPOCH, _POSITION, _SLOTS = 0, 1, 2, 3


@dataclass(frozen=True)
class Plan:
    """Where one iteration starts: the epoch and the global stream position."""

    epoch: int
    position: int


class Control:
    """Shared ``(generation, epoch, position)`` plus per-worker-slot iteration counters.

    Picklable while DataLoader starts its workers (inheritance, fork or spawn); pickled at any
    other time (``copy.deepcopy``, ``torch.save``) it comes back as a fresh, unshared block
    holding the same plan.
    """

    def __init__(self, epoch: int = 0, position: int = 0) -> None:
        self._arr: Any = multiprocessing.sharedctypes.RawArray("q", _SLOTS + 2 * MAX_WORKERS)
        self.set(epoch, position)

    def __getstate__(self) -> dict[str, Any]:
        from multiprocessing.context import get_spawning_popen

        if get_spawning_popen() is not None:
            return {"arr": self._arr}
        return {"plan": (self._arr[_EPOCH], self._arr[_POSITION])}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "arr" in state:
            self._arr = state["arr"]
        else:
            self._arr = multiprocessing.sharedctypes.RawArray("q", _SLOTS + 2 * MAX_WORKERS)
            self.set(*state["plan"])

    def set(self, epoch: int, position: int) -> None:
        """Make ``(epoch, position)`` the plan for every worker's next iteration."""
        self._arr[_EPOCH] = epoch
        self._arr[_POSITION] = position
        self._arr[_GEN] += 1

    @property
    def plan(self) -> Plan:
        """The plan as last set (not advanced by iterations)."""
        return Plan(self._arr[_EPOCH], self._arr[_POSITION])

    def iterations(self) -> int:
        """Iterations the workers began since the plan was last set (the most of any slot)."""
        gen = self._arr[_GEN]
        return max((self._arr[_SLOTS + 2 * i + 1] for i in range(MAX_WORKERS)
                    if self._arr[_SLOTS + 2 * i] == gen), default=0)

    def iterated(self) -> bool:
        """Whether any worker began an iteration since the plan was last set."""
        return self.iterations() > 0

    def begin(self, slot: int) -> tuple[Plan, int]:
        """The plan for the iteration worker ``slot`` begins now, and the plan's generation."""
        if not 0 <= slot < MAX_WORKERS:
            raise ValueError(f"worker id {slot}: at most {MAX_WORKERS} DataLoader workers")
        gen = self._arr[_GEN]
        seen, count = _SLOTS + 2 * slot, _SLOTS + 2 * slot + 1
        if self._arr[seen] != gen:
            self._arr[seen] = gen
            self._arr[count] = 0
        n = self._arr[count]
        self._arr[count] = n + 1
        if n == 0:
            return Plan(self._arr[_EPOCH], self._arr[_POSITION]), gen
        return Plan(self._arr[_EPOCH] + n, 0), gen
