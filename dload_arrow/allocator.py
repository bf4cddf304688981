"""Arrow's allocator for processes that fork: jemalloc where pyarrow would pick mimalloc.

pyarrow (24 and later) allocates through a bundled mimalloc 3, which registers no fork
handlers. A torch DataLoader forks its workers while other threads of the training process
may be inside the allocator (our download and decode threads, Arrow's own pools); a worker
forked at that moment can inherit a held lock or a half-updated page and crash with SIGSEGV
or hang on its first allocation. jemalloc takes its locks across ``fork()`` (as glibc's
malloc does), and it was Arrow's default on Linux before mimalloc.

So on Linux, importing dload_arrow chooses jemalloc (or the system allocator where the wheel
has no jemalloc), unless ``ARROW_DEFAULT_MEMORY_POOL`` is already set: that choice, mimalloc
included, stands. The choice costs no pyarrow import: before pyarrow is loaded it is the
environment variable Arrow reads, after it is ``pyarrow.set_memory_pool``.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

ENV = "ARROW_DEFAULT_MEMORY_POOL"
_JEMALLOC_WHEELS = ("x86_64", "amd64")  # pyarrow's Linux wheels that carry jemalloc


def choose_fork_safe_pool() -> str | None:
    """Make Arrow allocate through a fork-safe allocator; return the backend chosen, if any.

    Nothing is changed off Linux (DataLoader workers start by spawn there), nor when the
    user set ``ARROW_DEFAULT_MEMORY_POOL`` themselves.
    """
    if not sys.platform.startswith("linux") or os.environ.get(ENV):
        return None
    pa = sys.modules.get("pyarrow")
    if pa is None:  # not loaded: Arrow reads the variable when it makes its default pool
        backend = "jemalloc" if platform.machine().lower() in _JEMALLOC_WHEELS else "system"
        os.environ[ENV] = backend
        return backend
    return _replace_mimalloc(pa)


def _replace_mimalloc(pa: Any) -> str | None:
    """pyarrow was imported first: swap its default pool if that is mimalloc."""
    try:
        if pa.default_memory_pool().backend_name != "mimalloc":
            return None
    except AttributeError:  # pyarrow only half imported (an import cycle): leave it
        return None
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a build without jemalloc
        pool = pa.system_memory_pool()
    pa.set_memory_pool(pool)  # buffers already made keep the pool that made them
    return str(pool.backend_name)


_ARENAS = 2  # glibc malloc arenas under an address-space limit (M_ARENA_MAX)


def cap_malloc_arenas() -> bool:
    """Under a finite ``ulimit -v`` (RLIMIT_AS; HPC schedulers set one), cap glibc's malloc
    arenas at :data:`_ARENAS`, as ``MALLOC_ARENA_MAX=2`` does: each thread that allocates
    (downloads, decoding, Arrow's pools) otherwise reserves a 64 MB arena of address space
    it barely uses, and a read of large rows failed in malloc under 1 GB with 270 MB of data
    (QA volumes65). Left alone off glibc or where ``MALLOC_ARENA_MAX`` is set. Returns
    whether it capped them."""
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        import ctypes
        import resource

        if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
            return False
        return bool(ctypes.CDLL(None).mallopt(-8, _ARENAS))  # -8: M_ARENA_MAX
    except (OSError, AttributeError, ValueError):  # (no glibc: musl has no mallopt)
        return False
