"""The epoch plan shared between the main process and its DataLoader workers.

Workers hold copies of the dataset made when they started; persistent workers keep them for
the whole run. ``set_epoch`` and ``load_state_dict`` happen in the main process, so the plan
(epoch, start position) travels through a small block of shared memory that every worker reads
when an iteration begins: no copy can go stale.

Epochs advance by themselves. Every DataLoader iteration is told apart by the workers' base
seed (``worker_info.seed - worker_info.id``: one per iterator, drawn anew for each) and by how
many iterations a worker has already begun under that seed (persistent workers keep one seed
for every iteration). The first worker to begin an iteration records its plan, the plan
after the last recorded one; the other workers of that iteration read the same record. So all
workers agree on the epoch without talking to each other, a worker id that joins later (the
loader rebuilt with more workers) lands in the same epoch as the rest, and an epoch restored
inside the workers (torchdata's StatefulDataLoader hands each worker its own state) is followed
by the next epoch, whichever processes serve it.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.sharedctypes
from dataclasses import dataclass
from typing import Any

from dload_arrow.errors import ConfigError

__all__ = ["MAX_WORKERS", "Control", "Plan"]

MAX_WORKERS = 256
# Shared layout: the plan as set, then the last recorded iteration, then per worker slot
# (generation, base seed, iterations begun under that seed).
_GEN, _EPOCH, _POSITION = 0, 1, 2
_REC_GEN, _REC_SEED, _REC_K, _REC_EPOCH, _REC_POSITION = 3, 4, 5, 6, 7
_SLOTS, _SLOT = 8, 3


@dataclass(frozen=True)
class Plan:
    """Where one iteration starts: the epoch and the global stream position."""

    epoch: int
    position: int


class Control:
    """The shared plan and the record of the workers' last iteration.

    Picklable while DataLoader starts its workers (inheritance, fork or spawn); pickled at any
    other time (``copy.deepcopy``, ``torch.save``) it comes back as a fresh, unshared block
    holding the same plan.
    """

    def __init__(self, epoch: int = 0, position: int = 0) -> None:
        self._arr: Any = multiprocessing.sharedctypes.RawArray("q", _SLOTS + _SLOT * MAX_WORKERS)
        # A spawn-context lock passes to workers of any start method (a fork-context one is
        # refused by spawned workers); fork children inherit it either way.
        self._lock: Any = multiprocessing.get_context("spawn").Lock()
        self.set(epoch, position)

    def __getstate__(self) -> dict[str, Any]:
        from multiprocessing.context import get_spawning_popen

        if get_spawning_popen() is not None:
            return {"arr": self._arr, "lock": self._lock}
        return {"plan": (self._arr[_EPOCH], self._arr[_POSITION])}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "arr" in state:
            self._arr, self._lock = state["arr"], state["lock"]
        else:
            self.__init__(*state["plan"])  # type: ignore[misc]

    def set(self, epoch: int, position: int) -> None:
        """Make ``(epoch, position)`` the plan for every worker's next iteration."""
        with self._lock:
            self._arr[_EPOCH] = epoch
            self._arr[_POSITION] = position
            self._arr[_GEN] += 1

    @property
    def plan(self) -> Plan:
        """The plan as last set (not advanced by iterations)."""
        return Plan(self._arr[_EPOCH], self._arr[_POSITION])

    def last(self) -> Plan | None:
        """The plan of the workers' last iteration since the plan was set (None: none yet)."""
        with self._lock:
            if self._arr[_REC_GEN] != self._arr[_GEN]:
                return None
            return Plan(self._arr[_REC_EPOCH], self._arr[_REC_POSITION])

    def iterated(self) -> bool:
        """Whether any worker began an iteration since the plan was last set."""
        return self.last() is not None

    def begin(self, slot: int, seed: int, restored: Plan | None = None) -> Plan:
        """The plan for the iteration worker ``slot`` (base seed ``seed``) begins now.

        ``restored``: this worker's own restored state, which that iteration follows instead
        (and the next iteration follows it)."""
        if not 0 <= slot < MAX_WORKERS:
            raise ConfigError(f"worker id {slot}: at most {MAX_WORKERS} DataLoader workers")
        a, at = self._arr, _SLOTS + _SLOT * slot
        with self._lock:
            gen = a[_GEN]
            if (a[at], a[at + 1]) != (gen, seed):
                a[at], a[at + 1], a[at + 2] = gen, seed, 0
            k = a[at + 2]
            a[at + 2] = k + 1
            plan, same = self._following(seed, k)
            if restored is not None:
                plan = restored
            elif same:
                return plan
            a[_REC_GEN], a[_REC_SEED], a[_REC_K] = gen, seed, k
            a[_REC_EPOCH], a[_REC_POSITION] = plan.epoch, plan.position
            return plan

    def upcoming(self, slot: int, seed: int) -> Plan:
        """The plan :meth:`begin` will give worker ``slot``'s next iteration under base seed
        ``seed``, recording nothing: the state of a worker saved before its first item (a
        non-persistent worker of the next epoch has not advanced the epoch yet)."""
        a, at = self._arr, _SLOTS + _SLOT * slot
        with self._lock:
            k = a[at + 2] if (a[at], a[at + 1]) == (a[_GEN], seed) else 0
            return self._following(seed, k)[0]

    def _following(self, seed: int, k: int) -> tuple[Plan, bool]:
        """The plan of iteration ``k`` under ``seed`` (called with the lock held), and whether
        it is the one recorded (another worker of that iteration began it)."""
        a, gen = self._arr, self._arr[_GEN]
        if (a[_REC_GEN], a[_REC_SEED], a[_REC_K]) == (gen, seed, k):
            return Plan(a[_REC_EPOCH], a[_REC_POSITION]), True
        if a[_REC_GEN] == gen:
            return Plan(a[_REC_EPOCH] + 1, 0), False
        return Plan(a[_EPOCH], a[_POSITION]), False
