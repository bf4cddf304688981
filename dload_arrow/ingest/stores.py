"""Folders that are dload's own data, wherever a commit reads: a root or a cache inside a
committed folder (or the folder itself, or a folder inside another root's ``datasets/``) is
never read as samples or tables, whichever root the commit writes to.

A root is told by dload's own files (a latest ref, a manifest, a removal record in a dataset's
folder, beside ``shards/``), a cache by its ``CACHEDIR.TAG`` or, a cache only ever used with a
local root (no shard fetched, so no tag: QA review66), by its manifest copies
(``manifests/<root id>/<version>.arrow``) or verified-shard marks (``verified/aa/<digest>``).
Folders merely named ``datasets/``, ``shards/`` or ``log/`` are read (QA review65g).
"""

from __future__ import annotations

import os
import re
from contextlib import suppress

from dload_arrow.errors import ConfigError
from dload_arrow.read.cache_space import MARKER, is_cache_marker
from dload_arrow.store.names import is_digest

__all__ = ["is_store", "refuse_inside_store", "store_above", "store_refusal"]

_ROOT_ID = re.compile(r"[0-9a-f]{16}")


def is_store(path: str) -> bool:
    """Whether ``path`` is a dload root or a dload cache (module doc)."""
    if is_cache_marker(os.path.join(path, MARKER)) or _cache_files(path):
        return True  # (not another tool's CACHEDIR.TAG: Cargo's target/ has one, 65d)
    if not os.path.isdir(os.path.join(path, "shards")):
        return False
    try:  # dload's own files in a dataset's folder: its latest ref, a manifest, a removal
        with os.scandir(os.path.join(path, "datasets")) as names:  # record (an rm's)
            return any(_dload_files(n.path) for n in names if n.is_dir())
    except OSError:
        return False


def store_above(path: str, levels: int = 3) -> str | None:
    """The root or cache that ``path`` lies inside, in one of its own folders (its
    ``datasets/``, a dataset's folder, a cache's ``manifests/``), up to ``levels`` folders
    above it; None when there is none (QA review66b: a user's folder beside a root's own
    folders, ``/data/raw`` with ``/data`` a root, is theirs)."""
    here = os.path.realpath(path)
    for _ in range(levels):
        up = os.path.dirname(here)
        if up == here:
            return None
        below, here = os.path.basename(here), up
        if below in _OWN and is_store(here):
            return here
    return None


_OWN = frozenset({"datasets", "shards", "manifests", "verified", "derived"})  # dload's own


def refuse_inside_store(location: str, path: str, own: frozenset[str],
                        itself: bool = False) -> None:
    """ConfigError when ``path`` (``location`` as given; with ``itself``, ``path`` too) lies
    inside a root or cache other than the commit's own (``own``: its real folders, refused
    by ``refuse_own_data``): another local root's ``datasets/`` was committed, its manifests
    and log entries (host names) as samples, where on S3 it is refused (QA review66)."""
    real = os.path.realpath(path)
    above = real if itself and is_store(real) else store_above(real)
    if above is None or os.path.join(above, "datasets") in own or above in own:
        return
    raise store_refusal(location, above, "is" if above == real else
                        f"lies inside {above}, which is")


def store_refusal(location: str, store: str, where: str = "is") -> ConfigError:
    """The refusal of ``location`` as samples: ``where`` (``is``) the root or cache ``store``."""
    if is_cache_marker(os.path.join(store, MARKER)) or _cache_files(store):  # (QA review66b:
        return ConfigError(  # `dload ls --root` of a cache lists nothing)
            f"{location!r} {where} a dload cache: its files are copies of shards and "
            "manifests that dload may delete at any time, not samples; point --from at the "
            "folder of your files")
    return ConfigError(
        f"{location!r} {where} a dload root: its files are manifests, log entries and "
        f"shards, not samples; its datasets are listed by `dload ls --root {store}`, and one "
        "is copied to another root with repo.commit(name, other.dataset(name))")


def _dload_files(folder: str) -> bool:
    """Whether dataset ``folder`` holds a file only dload writes (QA review65g: any folder
    with log/ or refs/ beside a shards/ was taken as a root)."""
    if os.path.isfile(os.path.join(folder, "refs", "latest")):
        return True
    for sub, ext in (("manifests", ".arrow"), ("removed", ".json")):
        with suppress(OSError), os.scandir(os.path.join(folder, sub)) as files:
            if any(is_digest(f.name.removesuffix(ext)) for f in files):
                return True
    return False


def _cache_files(path: str) -> bool:
    """Whether ``path`` holds a cache's manifest copies or verified-shard marks."""
    with suppress(OSError), os.scandir(os.path.join(path, "manifests")) as roots:
        for r in roots:
            if r.is_dir() and _ROOT_ID.fullmatch(r.name):
                with suppress(OSError), os.scandir(r.path) as files:
                    if any(is_digest(f.name.removesuffix(".arrow")) for f in files):
                        return True
    with suppress(OSError), os.scandir(os.path.join(path, "verified")) as parts:
        for p in parts:
            if p.is_dir() and len(p.name) == 2:
                with suppress(OSError), os.scandir(p.path) as files:
                    if any(is_digest(f.name) for f in files):
                        return True
    return False
