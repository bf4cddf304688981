"""One S3 filesystem per process and set of options, shared by every root that uses them.

A new s3fs instance builds its own botocore session on its first request: it parses the
service model JSON again and registers its event hooks, 150-250 ms here. A process that
opens two datasets of one bucket (a mix, a derive, a notebook that reopens the repository)
paid that once per :class:`~dload_arrow.storage.remote.FsspecStorage`. Instances are shared
instead, keyed by the protocol and the options. They are not shared across processes: after
a fork (DataLoader workers) the child builds its own, as s3fs clients hold event loops and
connection pools that must not cross a fork.

Sharing is safe because nothing per-root lives in the instance: the listing cache is off
(``use_listings_cache=False``), and s3fs instances are thread-safe (their calls run on one
event loop).
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from typing import Any

__all__ = ["forget_inherited", "s3_filesystem", "shared_filesystem"]

_LOCK = threading.Lock()
_CACHE: dict[str, Any] = {}
_PID = [os.getpid()]


def _after_fork() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # a parent thread building a client at the fork held it


os.register_at_fork(after_in_child=_after_fork)


def _key(protocol: str, options: dict[str, Any]) -> str | None:
    try:
        return json.dumps([protocol, options], sort_keys=True)
    except (TypeError, ValueError):  # an option that is not plain data (a session object)
        return None


def shared_filesystem(protocol: str, options: dict[str, Any],
                      attributes: dict[str, Any] | None = None) -> Any:
    """The fsspec filesystem for ``protocol`` and ``options``, built once per process;
    ``attributes`` are set on the instance (options its constructor does not take)."""
    import fsspec

    options = {k: v for k, v in options.items() if k != "skip_instance_cache"}
    attributes = attributes or {}
    key = _key(protocol, {**options, "(attributes)": attributes})

    def build() -> Any:
        fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
        for name, value in attributes.items():
            setattr(fs, name, value)
        return fs

    if key is None:
        return build()
    with _LOCK:
        if _PID[0] != os.getpid():  # a forked child: the parent's clients are not ours
            for inherited in _CACHE.values():
                forget_inherited(inherited)
            _CACHE.clear()
            _PID[0] = os.getpid()
        fs = _CACHE.get(key)
        if fs is None:
            fs = build()
            _CACHE[key] = fs
        return fs


def forget_inherited(fs: Any) -> None:
    """Drop the clean-up that ``fs``, a filesystem a forked child inherited, would run when
    collected: s3fs closes its session then, and in the child that session and its event
    loop are the parent's (DataLoader workers printed "Task exception was never retrieved
    ... attached to a different loop" tracebacks). The parent closes its own."""
    registry = getattr(weakref.finalize, "_registry", None)  # CPython's, since 3.4
    if not isinstance(registry, dict):
        return
    for fin in list(registry):
        info = fin.peek()
        if info is not None and info[0] is fs:
            fin.detach()


# s3fs repeats a failed call (a timeout too) this many times, each with botocore's attempts
_CLIENT_RETRIES = 2


def s3_filesystem(options: dict[str, Any]) -> Any:
    """The shared s3fs filesystem of a root's ``options``, with dload's defaults.

    No listing cache: other processes create and delete objects (commits, gc), and a stale
    cached listing would make exists() lie about a deleted shard; without one, roots with the
    same options share one instance. Timeouts and retries: a refused endpoint fails in 1-3 s,
    not after botocore's and s3fs's retries stacked (7-20 s for one `dload ls`); one that
    accepts and never answers in about 2 minutes, not after 60 s read timeouts retried
    (5 min). The user's own ``config_kwargs`` or ``retries`` replace these.
    """
    opts = dict(options)
    opts.setdefault("use_listings_cache", False)
    opts.setdefault("config_kwargs", {"connect_timeout": 10, "read_timeout": 20,
                                      "retries": {"max_attempts": 2, "mode": "standard"}})
    given = opts.pop("retries", None)  # s3fs takes no such argument: set on the instance
    retries = _CLIENT_RETRIES if given is None else int(given)  # checked by open_storage
    return shared_filesystem("s3", opts, {"retries": retries})
