"""The settings only the environment gives, checked and shown with the others.

``DLOAD_MEMORY_LIMIT`` (the memory a full shuffle assumes), ``DLOAD_DIRECT_GET`` (shard
downloads over http.client or s3fs) and ``DLOAD_CACHE_WAIT`` (seconds a reader waits for
cache room) were read where they are used, so a bad value passed ``dload status`` and
every command until a download or a large commit met it (QA cfg56). Opening a repository
now checks all three (:func:`check_env_settings`, when its ``ReadContext`` is made) and
``dload status`` lists them (:func:`env_settings`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dload_arrow.errors import ConfigError

__all__ = ["check_env_settings", "env_settings"]


def _memory() -> str:
    from dload_arrow.read.memory import MEMORY_LIMIT_ENV, available_memory
    from dload_arrow.sizes import format_bytes

    if os.environ.get(MEMORY_LIMIT_ENV, "").strip():
        n = available_memory()  # the variable's size, or None for 'unlimited'
        return "unlimited" if n is None else format_bytes(n)
    return "the machine's available memory"


def _direct() -> str:
    from dload_arrow.storage.http_get import direct_wanted

    return ("1 (shard GETs over http.client)" if direct_wanted() else
            "0 (every GET through s3fs)")


def _wait() -> str:
    from dload_arrow.read.cache_budget import wait_seconds

    return f"{wait_seconds():g} s"


_READERS: dict[str, Callable[[], str]] = {
    "DLOAD_MEMORY_LIMIT": _memory,
    "DLOAD_DIRECT_GET": _direct,
    "DLOAD_CACHE_WAIT": _wait,
}


def env_settings() -> dict[str, dict[str, Any]]:
    """Each environment-only variable: ``value`` (as set, or None), ``effective`` (what it
    means, None when the value is refused) and ``error`` (the refusal, or None)."""
    out: dict[str, dict[str, Any]] = {}
    for name, read in _READERS.items():
        raw = os.environ.get(name)
        try:
            out[name] = {"value": raw, "effective": read(), "error": None}
        except ConfigError as e:
            out[name] = {"value": raw, "effective": None, "error": str(e)}
    return out


def check_env_settings() -> None:
    """Refuse a bad value of any environment-only variable (a ConfigError naming it), at once
    rather than when a download or a large commit first reads it."""
    for name, read in _READERS.items():
        if os.environ.get(name):
            read()
