"""How much memory this process may still use, and the check a full shuffle makes against it.

A full shuffle holds every row it will hand out in memory at once. The read planner checks the
disk before any download, but a manifest records stored sizes only, not decoded ones. So the
check runs as row groups are decoded, from the first one on
(:class:`dload_arrow.pipeline.window_layout.MemoryCheck`): what the decoded row groups take,
plus an estimate for the rest scaled from them, is compared with what the machine had left
(:func:`full_shuffle_error`). Running out of memory would otherwise kill the process minutes
into an epoch, often with no message at all (a slurm job's cgroup, a notebook's kernel).

Available memory is the smallest of ``MemAvailable`` in ``/proc/meminfo`` and, for this
process's memory cgroup and each cgroup above it (``/proc/self/cgroup``: a slurm step inside
its job, a container), the limit minus the usage (v2 ``memory.max``, v1
``memory.limit_in_bytes``). Where none can be read (not Linux), no check is made.
``DLOAD_MEMORY_LIMIT`` overrides the detection: a size such as ``"8GB"`` is taken as the
available memory, ``unlimited`` turns the check off.
"""

from __future__ import annotations

import os
from pathlib import Path

from dload_arrow.errors import ConfigError, InfeasiblePlanError
from dload_arrow.sizes import format_bytes, parse_size

__all__ = [
    "MEMORY_LIMIT_ENV",
    "available_memory",
    "check_full_shuffle_memory",
    "full_shuffle_error",
    "local_consumers",
    "set_local_consumers",
]

MEMORY_LIMIT_ENV = "DLOAD_MEMORY_LIMIT"
_NO_LIMIT = 1 << 60  # cgroup v1 reports "no limit" as a huge number
_local_consumers = 1


def set_local_consumers(n: int) -> None:
    """Declare how many consumers (processes) share this machine's memory, this one included.

    The torch adapter sets it in each DataLoader worker (workers x ``LOCAL_WORLD_SIZE``), so a
    full shuffle's check counts what all of them hold together, not one process's share.
    """
    global _local_consumers
    _local_consumers = max(1, int(n))


def local_consumers() -> int:
    """Consumers sharing this machine, as declared by :func:`set_local_consumers` (1 if not)."""
    return _local_consumers


def _meminfo_available(proc: Path) -> int | None:
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_left(proc: Path) -> int | None:
    """What ``ulimit -v`` (RLIMIT_AS, as sandboxes set) leaves of this process's address
    space: the limit less its size now (QA security64: a commit failed in malloc, unwarned)."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        for line in (proc / "self" / "status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return max(soft - int(line.split()[1]) * 1024, 0)
    except (OSError, ValueError, IndexError):
        pass
    return soft


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value < _NO_LIMIT else None


def _own_cgroups(proc: Path, root: Path) -> list[tuple[Path, str, str]]:
    """The memory cgroup directories of this process, innermost first, with the names of
    their limit and usage files (from ``/proc/self/cgroup``; the mount root when unknown)."""
    v2 = ("memory.max", "memory.current")
    v1 = ("memory.limit_in_bytes", "memory.usage_in_bytes")
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        lines = []
    found: list[tuple[Path, str, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, rel = parts
        if hierarchy == "0" and not controllers:
            base, names = root, v2
        elif "memory" in controllers.split(","):
            base, names = root / "memory", v1
        else:
            continue
        d = base / rel.strip("/")
        while True:  # a parent's limit binds too (a slurm job above its step)
            found.append((d, *names))
            if d == base or base not in d.parents:
                break
            d = d.parent
    # no /proc/self/cgroup, or it names no memory cgroup: the mount's own files
    found += [(root, *v2), (root / "memory", *v1)]
    return list(dict.fromkeys(found))


def _cgroup_available(proc: Path, cgroup: Path) -> int | None:
    rooms = []
    for d, limit_name, usage_name in _own_cgroups(proc, cgroup):
        limit = _read_int(d / limit_name)
        if limit is not None:
            rooms.append(max(0, limit - (_read_int(d / usage_name) or 0)))
    return min(rooms) if rooms else None


def available_memory(proc: str = "/proc", cgroup: str = "/sys/fs/cgroup") -> int | None:
    """Bytes this process may still allocate, or None where that cannot be told (or the
    check is turned off with ``DLOAD_MEMORY_LIMIT=unlimited``).

    Args:
        proc: the proc filesystem (a parameter so tests can point it at a fixture).
        cgroup: the cgroup filesystem mount.

    Raises:
        ConfigError: ``DLOAD_MEMORY_LIMIT`` is set but is not a size.
    """
    env = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if env.lower() == "unlimited":
        return None
    if env:
        try:
            return parse_size(env, MEMORY_LIMIT_ENV)
        except ConfigError as e:
            raise ConfigError(
                f"{e}; or 'unlimited', or unset {MEMORY_LIMIT_ENV} to use the machine's memory"
            ) from e
    found = [v for v in (_meminfo_available(Path(proc)),
                         _cgroup_available(Path(proc), Path(cgroup)),
                         _address_space_left(Path(proc)))
             if v is not None]
    return min(found) if found else None


def check_full_shuffle_memory(dataset: str, bytes_per_row: float, rows: int,
                              overhead_per_row: int = 0) -> None:
    """Raise InfeasiblePlanError when ``rows`` decoded rows cannot fit in memory.

    Args:
        dataset: named in the message.
        bytes_per_row: decoded bytes per row.
        rows: rows this consumer holds at once (times the local consumers, see
            :func:`set_local_consumers`).
        overhead_per_row: extra bytes per row (Python objects when rows become dicts).
    """
    free = available_memory()
    if free is None or rows <= 0:
        return
    need = int(rows * (bytes_per_row + overhead_per_row)) * _local_consumers
    if need > free:
        raise full_shuffle_error(dataset, rows, need, free, "estimated from its rows")


def full_shuffle_error(dataset: str, rows: int, need: int, free: int,
                       basis: str) -> InfeasiblePlanError:
    """The error of a full shuffle whose ``rows`` need ``need`` bytes (all the local
    consumers together, ``basis`` says how that was estimated) where ``free`` are left."""
    sharers = _local_consumers
    who = ("this process needs" if sharers == 1
           else f"the {sharers} consumers on this machine need")
    return InfeasiblePlanError(
        f"a full shuffle of {dataset} holds {rows:,} decoded rows in memory per consumer; "
        f"{who} about {format_bytes(need)} ({basis}), but "
        f"{format_bytes(free)} are available. Fixes: use a windowed shuffle "
        "(shuffle(buffer=...): its memory is about three windows), shuffle a filtered view "
        "(where=) or fewer columns (pipeline(columns=...)), use fewer DataLoader workers or "
        f"more machines, or set {MEMORY_LIMIT_ENV} (a size, or 'unlimited') if the "
        "available memory is misjudged"
    )
