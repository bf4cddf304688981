"""The error for a manifest read under a dataset's name that names another dataset: a version
id of another dataset, or a folder renamed, copied or merged outside dload (``mv datasets/p1
datasets/p2``, ``cp -r datasets/p1 datasets/p1.bak``, copies merged into a dataset's folder),
each with the fix that mixes nothing (QA review64i, 64j, review65, 65b)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dload_arrow.errors import DloadError, InvalidNameError
from dload_arrow.store.names import is_digest, manifest_path

if TYPE_CHECKING:
    from dload_arrow.storage import Storage
    from dload_arrow.store.manifest import Manifest

__all__ = ["FolderCopyError", "misnamed_error"]


class FolderCopyError(InvalidNameError):
    """A dataset folder renamed, copied or merged outside dload (a commit into it is refused)."""


def misnamed_error(storage: Storage, name: str, version: str, named: str,
                   load: Callable[[str], Manifest]) -> InvalidNameError:
    """The error for manifest ``version`` asked for as ``name`` naming dataset ``named``
    (``load`` reads a manifest of ``name``'s folder by id)."""
    if not _holds(storage, name, version):
        return InvalidNameError(
            f"manifest {version[:12]} asked for as {name!r} names dataset {named!r}: a version "
            f"id belongs to one dataset (open it as repo.dataset({named!r}, {version[:12]!r}))")
    own = _own(storage, name, version, load)
    if own:  # copies merged into a dataset's folder
        fix = (f"it is a copy of {named!r}'s version merged into the folder of dataset "
               f"{name!r}: remove datasets/{name}/manifests/{version}.arrow")
        if own == "latest copied":  # (cp -r of a whole folder: its latest too, QA 65c)
            fix += (f" and the other copies `dload ls` names; the copy replaced {name!r}'s "
                    f"refs/latest too (and its log): then commit its own version again, "
                    f"repo.commit({name!r}, repo.dataset({name!r}, VERSION)), VERSION the name "
                    f"of a manifest left in datasets/{name}/manifests/ (the same id comes back)")
    else:
        there = _has(storage, named)
        fix = (f"move it out of the root: datasets/{named} is there (moving it back would "
               "mix the two)" if there == "latest" else  # (a `mv` into the folder an rm
               f"datasets/{named} is there, left by an rm (its log): move the folder's "  # left
               f"contents into it (`cp -r datasets/{name}/. datasets/{named}/`, then remove "
               f"datasets/{name}; a `mv` would put the folder inside it)" if there else
               f"move it back to datasets/{named} (then `repo.commit({name!r}, "
               f"repo.dataset({named!r}))` copies the dataset under the new name)")
    return FolderCopyError(
        f"the folder datasets/{name} holds manifest {version[:12]}, which names dataset "
        f"{named!r}: it was renamed or copied outside dload; {fix}")


def _holds(storage: Storage, name: str, version: str) -> bool:
    """Whether the root's folder of ``name`` holds the manifest ``version``."""
    try:
        return storage.exists(manifest_path(name, version))
    except DloadError:
        return False


def _has(storage: Storage, name: str) -> str:
    """What the root holds of dataset ``name``: "latest" (its ref), "folder" (objects of it,
    an rm's log), or "" (nothing)."""
    try:
        if storage.exists(f"datasets/{name}/refs/latest"):
            return "latest"
        return "folder" if storage.list(f"datasets/{name}/") else ""
    except DloadError:
        return "latest"  # (unknown: the advice that mixes nothing)


def _own(storage: Storage, name: str, version: str, load: Callable[[str], Manifest]) -> str:
    """Whether ``name``'s folder is a dataset of its own: "latest" (its ``latest`` is another
    version, whose manifest names ``name``), "latest copied" (a manifest of it names
    ``name``, while ``latest`` was copied over), or ""."""
    from dload_arrow.store.refs import read_ref

    try:
        ref = read_ref(storage, name, "latest")
        if ref is not None and ref.version != version and load(ref.version).name == name:
            return "latest"
        prefix = f"datasets/{name}/manifests/"
        for o in storage.list(prefix):
            vid = o.path[len(prefix):].removesuffix(".arrow")
            if is_digest(vid) and vid != version and load(vid).name == name:
                return "latest copied"
    except DloadError:
        pass
    return ""
