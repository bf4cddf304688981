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
from typing import Any

__all__ = ["shared_filesystem"]

_LOCK = threading.Lock()
_CACHE: dict[str, Any] = {}
_PID = [os.getpid()]


def _key(protocol: str, options: dict[str, Any]) -> str | None:
    try:
        return json.dumps([protocol, options], sort_keys=True)
    except (TypeError, ValueError):  # an option that is not plain data (a session object)
        return None


def shared_filesystem(protocol: str, options: dict[str, Any]) -> Any:
    """The fsspec filesystem for ``protocol`` and ``options``, built once per process."""
    import fsspec

    options = {k: v for k, v in options.items() if k != "skip_instance_cache"}
    key = _key(protocol, options)
    if key is None:
        return fsspec.filesystem(protocol, skip_instance_cache=True, **options)
    with _LOCK:
        if _PID[0] != os.getpid():  # a forked child: the parent's clients are not ours
            _CACHE.clear()
            _PID[0] = os.getpid()
        fs = _CACHE.get(key)
        if fs is None:
            fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
            _CACHE[key] = fs
        return fs

