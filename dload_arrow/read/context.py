"""What every reader of a root needs: the storage and this machine's cache settings."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dload_arrow.errors import ConfigError, DloadError
from dload_arrow.storage import Storage
from dload_arrow.storage.local import dangling_link

if TYPE_CHECKING:
    from dload_arrow.read.cache import Cache

__all__ = ["ReadContext", "cache_dir_error"]


@dataclass(frozen=True)
class ReadContext:
    """A root plus the local cache it streams through. Picklable (DataLoader workers).

    ``cache_dir_source`` says where the cache dir setting came from (``Settings.sources``),
    for error messages only.
    """

    storage: Storage
    cache_dir: str
    cache_budget: str = "auto"
    cache_dir_source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:  # made when a repository opens (not when unpickled)
        from dload_arrow.read.env_settings import check_env_settings

        check_env_settings()

    @property
    def in_place(self) -> bool:
        """True for a local-directory root: shards are read where they are, not cached."""
        return bool(getattr(self.storage, "is_local", False))

    def cache(self, *, trim: bool = True) -> Cache:
        """This process's handle on the machine-wide cache (one per process and directory).

        Opening it first trims the cache to this budget. With ``trim=False`` (a status
        report) the handle is one of its own that evicts nothing.

        Raises:
            ConfigError: the cache dir cannot be created or written (a path under a file, no
                permission, a read-only filesystem), naming it and how to choose another.
        """
        from dload_arrow.read.cache import Cache

        self._check_not_in_root()
        try:
            if not trim:  # a status report: evicts nothing, makes no cache dir
                return Cache(self.cache_dir, self.cache_budget, report=True)
            return Cache.shared(self.cache_dir, self.cache_budget)
        except OSError as e:
            if isinstance(e, DloadError):  # already says what failed (a lock timeout, ...)
                raise
            raise cache_dir_error(self.cache_dir, e, self.cache_dir_source) from e

    def _check_not_in_root(self, layout_only: bool = False) -> None:
        """A cache dir that is a local root or inside one would evict (or litter) the root.
        ``layout_only`` (checked when the root is opened, before the first manifest is
        cached): the root itself or one of its own folders (``datasets/``, ``shards/``)."""
        url = self.storage.url
        if not (self.in_place and url.startswith("file://")):
            return
        root = os.path.realpath(url[len("file://"):])
        cache = os.path.realpath(os.path.expanduser(self.cache_dir))
        inside = [root] if not layout_only else [
            os.path.join(root, sub) for sub in _ROOT_FOLDERS]
        if cache == root or any(cache.startswith(d.rstrip(os.sep) + os.sep) or cache == d
                                for d in inside):
            origin = f" (from {self.cache_dir_source})" if self.cache_dir_source else ""
            where = "is the root" if cache == root else "is inside the root"
            raise ConfigError(
                f"cannot use the cache dir {self.cache_dir}{origin}: it {where} {root}, and "
                "evicting cached shards there would delete the root's own; point the cache at "
                "a directory outside the root (DLOAD_CACHE_DIR, --cache-dir, cache_dir= in "
                "Repository.open or 'cache_dir' in dload.toml)"
            )


_ROOT_FOLDERS = ("datasets", "shards", ".locks")  # a root's own layout (store/names.py)


def _blocking_file(path: str) -> str | None:
    """The regular file standing where ``path`` or one of its parents should be a directory."""
    p = os.path.abspath(os.path.expanduser(path))
    while True:
        if os.path.lexists(p):
            return p if not os.path.isdir(p) else None
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def _owner(path: str) -> str:
    """Whose the file is, when another user's: a cache shared by a group needs its files
    group-writable, which every user's umask decides."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    if st.st_uid == os.geteuid():
        return ""
    return (f" (made by uid {st.st_uid}, mode {stat.filemode(st.st_mode)}: to share a cache "
            "with a group, every user needs umask 002 and the folder group-writable, e.g. "
            "`chmod -R g+rwX` it once)")


def unwritable(cache_dir: str) -> str | None:
    """Why this user cannot write the cache dir or one of its folders (another user's, made
    with umask 022: QA errors61, status called it fine and every read failed), else None."""
    try:
        folders = [cache_dir, *(e.path for e in os.scandir(cache_dir) if e.is_dir())]
    except OSError:
        return None  # missing (made on first use) or no folder: the read's error says
    for folder in folders:
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"this user cannot write {folder}{_owner(folder)}"
    return None


def cache_dir_error(cache_dir: str, error: OSError, source: str | None = None) -> ConfigError:
    """A ConfigError for a cache dir that ``error`` shows unusable: what, why, how to fix."""
    blocker = _blocking_file(cache_dir)
    dangling = dangling_link(cache_dir)
    if dangling:
        why = dangling
    elif blocker is not None:
        why = f"{blocker} is a file, not a directory"
    else:
        why = error.strerror or str(error)
        if error.filename and os.fspath(error.filename) != cache_dir:
            why = f"{why}: {os.fsdecode(error.filename)}"
            why += _owner(os.fsdecode(error.filename)) if error.errno == errno.EACCES else ""
        elif error.errno == errno.EACCES:  # the cache dir itself: whose it is too
            why += _owner(cache_dir)
    origin = f" (from {source})" if source else ""
    return ConfigError(
        f"cannot use the cache dir {cache_dir}{origin}: {why}; choose a writable directory "
        "with DLOAD_CACHE_DIR, --cache-dir, cache_dir= in Repository.open or 'cache_dir' in "
        "dload.toml"
    )
