"""Folders under a root's ``datasets/`` that are no dataset's own: a file manager's copy
(``p1 copy``: no dataset name), a ``cp -r`` of ``p1`` to ``p1.bak`` (its manifests name
``p1``), copies merged into another dataset's folder, and a folder moved inside a dataset's
folder (``mv datasets/p1.bak datasets/p1`` while an rm's log kept ``datasets/p1``). Listings
warn of them and leave them out; gc refuses to run while one holds manifests (they may be
the only ones that reference some shards). QA security64, docs64, review64h-j, review65.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dload_arrow.errors import DloadError, InvalidNameError
from dload_arrow.store.names import is_digest

if TYPE_CHECKING:
    from dload_arrow.storage import Storage

__all__ = ["copied_folder", "find_copies", "mixed_folder", "nested_folder", "nested_folders",
           "stray_folder", "valid_name"]

_SHOWN = 3  # copied manifests named in a warning


def find_copies(storage: Storage, left: dict[str, list[str]]
                ) -> tuple[dict[str, str], dict[str, tuple[str, list[str]]]]:
    """Folders (of ``left``: folder -> its manifests' ids) whose manifests copy another
    dataset's, judged by one manifest each folder shares with another (not every one: QA
    review65 counted a read per shared version): ``copies``, folder -> the dataset its
    manifests name, for a folder holding only such copies (``cp -r datasets/p1 p1.bak``), and
    ``mixed``, folder -> (that dataset, the copied ids), for a dataset's own folder that
    copies were merged into (``cp -r datasets/p1/. datasets/q/``: q stays listed)."""
    owners: dict[str, list[str]] = {}
    for n, vids in left.items():
        for v in vids:
            owners.setdefault(v, []).append(n)
    copies: dict[str, str] = {}
    mixed: dict[str, tuple[str, list[str]]] = {}
    judged: set[str] = set()
    for v, folders in owners.items():
        if len(folders) < 2 or set(folders) <= judged:
            continue
        real = next((m for f in folders if (m := _named(storage, f, v))), "")
        if not real:  # (no copy reads: the next shared one may)
            continue
        judged.update(folders)
        theirs = set(left.get(real, ()))
        for f in folders:
            if f == real:
                continue
            if real not in left or set(left[f]) <= theirs:
                copies[f] = real
            else:
                mixed[f] = (real, sorted(set(left[f]) & theirs))
    return copies, mixed


def copied_folder(storage: Storage, listed: Iterable[str], folder: str) -> str | None:
    """The dataset whose manifests ``folder`` copies (:func:`find_copies`), judged from the
    manifest paths ``listed`` under ``datasets/``; None when it is no copy."""
    left: dict[str, list[str]] = {}
    for path in listed:
        parts = path.split("/")
        if (len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow")
                and valid_name(parts[1])):
            left.setdefault(parts[1], []).append(parts[3][: -len(".arrow")])
    return find_copies(storage, left)[0].get(folder)


_OWN = ("log", "refs", "removed")  # a dataset's folders that hold no manifest


def nested_folders(paths: Iterable[str]) -> list[str]:
    """Folders below a dataset's folder that hold manifests (``p1/p1.bak`` for
    ``datasets/p1/p1.bak/manifests/V.arrow``: a folder moved inside it), or manifests
    outside its ``manifests/`` (``p1/manifests.bak``, ``p1/manifests/keep``: a backup of
    them, which rm deleted and gc did not read, QA review66)."""
    out = set()
    for path in paths:
        parts = path.split("/")
        if len(parts) < 4 or ".arrow" not in parts[-1] or parts[2] in _OWN or (
                len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow")):
            continue
        if len(parts) > 4 and parts[-2] == "manifests" and parts[-1].endswith(".arrow"):
            out.add("/".join(parts[1:-2]))
        else:  # (any copy: `x.arrow.bak`, a renamed `manifests.old/v1.arrow`: QA review66b)
            out.add("/".join(parts[1:-1]))
    return sorted(out)


def nested_folder(storage: Storage, folder: str, so: str) -> InvalidNameError:
    """The error (or warning) for ``folder`` (:func:`nested_folders`)."""
    outer = folder.split("/")[0]
    try:
        live = storage.exists(f"datasets/{outer}/refs/latest")
        first = next((v for o in storage.list(f"datasets/{folder}/manifests/") if is_digest(
            v := o.path.rsplit("/", 1)[-1].removesuffix(".arrow"))), None)  # (a .DS_Store:
        owner = _named(storage, folder, first) if first else None  # not one, QA review65f)
    except DloadError:
        live, owner, first = True, None, "?"
    if first is None:  # manifests loose in it: a backup of datasets/<outer>/manifests/ (66)
        return InvalidNameError(
            f"the folder datasets/{folder} under {_where(storage)} holds copies of manifests "
            f"that are not versions of {outer!r} (a version is datasets/{outer}/manifests/<its "
            f"id>.arrow: a backup of them?), so {so}; to keep them as versions, copy them into "
            f"datasets/{outer}/manifests/ named <sha256 of the file>.arrow and tag the ones to "
            f"keep (`dload tag {outer}@VERSION backup`), or move them out of the root")
    if owner and owner != outer:  # another dataset's backup (QA review65e)
        return InvalidNameError(
            f"the folder datasets/{folder} under {_where(storage)} holds manifests of dataset "
            f"{owner!r} inside the folder of {outer!r}, so {so}; move it out to datasets/"
            f"{owner} if that is free (then it reads as {owner!r}), else copy only its "
            f"manifests into datasets/{owner}/manifests/ and tag the ones to keep (`dload tag "
            f"{owner}@VERSION backup`); then remove datasets/{folder}")
    fix = (f"{outer!r} has versions of its own since, so a merge of the whole folder would mix "
           f"the two: copy only its manifests into datasets/{outer}/manifests/ (`cp datasets/"
           f"{folder}/manifests/*.arrow datasets/{outer}/manifests/`, `aws s3 cp --recursive` on "
           f"S3: each a version of its own id), tag the ones to keep (`dload tag {outer}@VERSION "
           f"backup`), then remove datasets/{folder}" if live else  # (QA review65b, 65c)
           f"if they are {outer!r}'s (a backup put back) merge them, `cp -r datasets/{folder}/. "
           f"datasets/{outer}/`, then remove datasets/{folder}; else move it out of the root")
    return InvalidNameError(
        f"the folder datasets/{folder} under {_where(storage)} holds manifests inside the "
        f"folder of {outer!r} (a folder moved into it, e.g. `mv datasets/{outer}.bak datasets/"
        f"{outer}` while datasets/{outer} was there), so {so}; {fix}")


def mixed_folder(storage: Storage, name: str, real: str, vids: list[str]) -> str:
    """The warning for dataset ``name``'s folder holding copies of ``real``'s manifests."""
    shown = ", ".join(f"datasets/{name}/manifests/{v}.arrow" for v in vids[:_SHOWN])
    more = f" and {len(vids) - _SHOWN} more" if len(vids) > _SHOWN else ""
    return (f"the folder of dataset {name!r} under {_where(storage)} holds {len(vids)} "
            f"manifest(s) copied from {real!r}'s folder (they name {real!r}), which its reads "
            f"refuse: remove them ({shown}{more})")


def stray_folder(storage: Storage, name: str, so: str, copy_of: str | None = None
                 ) -> InvalidNameError:
    """The error (or warning) for a folder under the root's ``datasets/`` whose name is no
    dataset name (``p1 copy``: what a file manager names a copied folder; QA security64), or
    that holds ``copy_of``'s manifests (a copy under a valid name, ``p1.bak``: QA docs64)."""
    why = (f"its manifests are copies of those of {copy_of!r} (they name it)" if copy_of else
           f"{name!r} is no dataset name (ASCII letters, digits, '.', '_' and '-')")
    return InvalidNameError(
        f"the folder datasets/{name} under {_where(storage)} is not a dataset: {why}, so {so}; "
        "move it out of the root (a dataset is copied by a commit of its rows under another "
        "name, repo.commit('new', repo.dataset('old')), not by copying its folder)")


def valid_name(name: str) -> bool:
    """Whether ``name`` is a dataset name."""
    from dload_arrow.store.names import check_name

    try:
        check_name(name)
    except InvalidNameError:
        return False
    return True


def _named(storage: Storage, folder: str, vid: str) -> str | None:
    """The dataset the manifest ``vid`` in ``folder`` names; None if it does not read (a
    half-copied one: the other folders tell, QA review64h)."""
    from dload_arrow.store.manifest import Manifest

    try:
        return Manifest.from_bytes(storage.read(f"datasets/{folder}/manifests/{vid}.arrow"),
                                   vid).name
    except DloadError:
        return None


def _where(storage: Storage) -> str:
    from dload_arrow.storage import redact_url

    return redact_url(storage.url)
