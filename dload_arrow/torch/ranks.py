"""Where this process stands among the training job's processes: its rank and world size.

The arguments win, then an initialised ``torch.distributed`` process group, then the
``RANK`` / ``WORLD_SIZE`` variables that torchrun, slurm wrappers and most launchers set;
without any of them a process is rank 0 of 1, until a process group exists: a dataset built
before ``init_process_group`` (``mp.spawn`` sets no variables) takes the group's rank when
it is first used (:class:`Ranks`), rather than read everything on every rank.
"""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Callable

import torch
import torch.distributed

from dload_arrow.args import MAX_COUNT
from dload_arrow.errors import ConfigError, user_stacklevel

__all__ = ["Ranks", "env_count", "env_int", "local_world_size", "resolve_rank"]


def env_int(name: str) -> int | None:
    """The integer value of environment variable ``name``; None when unset or empty."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise ConfigError(f"environment variable {name}={raw!r} is not an integer") from e


def env_count(name: str) -> int | None:
    """Environment variable ``name`` as a process count (>= 1); None when unset or empty.

    0 or a negative count is a launcher's mistake, never "one process": refused, named."""
    n = env_int(name)
    if n is not None and n < 1:
        raise ConfigError(
            f"environment variable {name}={os.environ[name]!r}: a process count must be >= 1; "
            f"set it to the job's number of processes (torchrun does), or unset it for one"
        )
    return n


def local_world_size() -> int:
    """The ranks on this machine: ``LOCAL_WORLD_SIZE`` (set by torchrun), else 1."""
    return env_count("LOCAL_WORLD_SIZE") or 1


def resolve_rank(rank: int | None = None, world_size: int | None = None) -> tuple[int, int]:
    """``(rank, world_size)``: the arguments, else torch.distributed, else RANK / WORLD_SIZE.

    Without any of them: rank 0 of 1. An environment value that is not an integer, a
    ``WORLD_SIZE`` below 1 or a ``RANK`` outside ``0 .. WORLD_SIZE - 1`` is a ConfigError
    naming the variable.
    """
    rank = _int_or_none("rank", rank)
    world_size = _int_or_none("world_size", world_size)
    dist = torch.distributed
    if _group():
        r, n = dist.get_rank(), dist.get_world_size()
        r_from = n_from = "torch.distributed"
        if rank is None and world_size is not None and world_size != n:
            raise ConfigError(
                f"world_size={world_size} without rank=, but the torch.distributed process "
                f"group has {n} processes (this one is rank {r}): pass rank= too, or neither "
                "(the group's are used)")
    else:
        env_rank = env_int("RANK") if rank is None else None
        env_n = env_count("WORLD_SIZE") if world_size is None else None
        n = env_n or 1
        if env_rank is None and n > 1 and rank is None:
            raise ConfigError(
                f"WORLD_SIZE={n} is set but RANK is not, so every process would read rank 0's "
                "share: set RANK for each process (torchrun does), or pass rank= and "
                "world_size="
            )
        if env_rank is None and rank is None and world_size is not None and world_size > 1:
            raise ConfigError(
                f"world_size={world_size} but no rank (no rank=, no RANK, no torch.distributed "
                "process group), so every process would read rank 0's share: pass rank= too"
            )
        r = env_rank or 0
        r_from = "environment variable RANK" if env_rank is not None else "the default"
        n_from = "environment variable WORLD_SIZE" if env_n is not None else "the default"
    if rank is not None:
        r, r_from = rank, "rank="
    if world_size is not None:
        n, n_from = world_size, "world_size="
    if n < 1 or not 0 <= r < n:
        raise ConfigError(
            f"rank={r}, world_size={n}: need world_size >= 1 and 0 <= rank < world_size (rank "
            f"from {r_from}, world_size from {n_from}); fix the RANK / WORLD_SIZE environment "
            "or the arguments"
        )
    return r, n


def _int_or_none(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise ConfigError(f"{name}={value!r}: need an int (e.g. {name}=int(os.environ[...]))")
    n = operator.index(value)  # type: ignore[arg-type]
    if n > MAX_COUNT:
        raise ConfigError(f"{name}={n}: need an int of at most {MAX_COUNT:,}")
    return n


class Ranks:
    """A dataset's rank and world size: fixed when something gave them (the arguments, the
    variables, a process group already there), else taken from torch.distributed as soon as
    a group exists (``mp.spawn``: the dataset is often built before ``init_process_group``;
    rank 0 of 1 kept then had every rank read the whole dataset, every sample twice at 2)."""

    def __init__(self, rank: int | None, world_size: int | None) -> None:
        self.rank, self.world_size = resolve_rank(rank, world_size)
        # open: no rank from anywhere yet. A world_size=1 alone (`int(os.environ.get(
        # "WORLD_SIZE", 1))` under mp.spawn) is checked against the group when it comes
        # (above 1 without a rank, resolve_rank refused it already).
        self._open = (rank is None and not _group() and env_int("RANK") is None
                      and env_int("WORLD_SIZE") is None)
        self._asked = world_size
        self._counted: int | None = None  # a len() given while still open

    def get(self) -> tuple[int, int]:
        """``(rank, world_size)`` now: the process group's once one exists, if still open
        (a ``world_size=`` given that differs from the group's is a ConfigError)."""
        if self._open and _group():
            self.rank, self.world_size = resolve_rank(None, self._asked)
            self._open = False
            if self._counted is not None and self.world_size > 1:
                _warn_counted(self._counted, self.rank, self.world_size)
        return self.rank, self.world_size

    def counted(self, length: Callable[[], int]) -> int:
        """``length()``, noted when answered before any rank was known (QA elastic61: a
        scheduler sized from it, before ``init_process_group``, ran ``world_size`` times too
        long): warned once the group gives this process its rank, unless that happens in a
        ``len()`` asked again (its count is right: QA review62)."""
        if self._open and _group():
            self._counted = None
        n = length()  # (takes the group's rank, if one came)
        if self._open and self._counted is None:
            self._counted = n
        return n


def _warn_counted(length: int, rank: int, world_size: int) -> None:
    warnings.warn(
        f"len() of this dataset was {length:,} before torch.distributed.init_process_group "
        f"(one process, the whole epoch); it is now rank {rank} of {world_size}, each rank "
        f"reading about 1/{world_size} of it: ask len() again after init_process_group "
        f"(a step count or scheduler sized from {length:,} is {world_size}x too long)",
        stacklevel=user_stacklevel(os.path.dirname(torch.__file__) + os.sep))


def _group() -> bool:
    dist = torch.distributed
    return bool(dist.is_available() and dist.is_initialized())
