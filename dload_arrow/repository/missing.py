"""The error text for a dataset name the root does not hold: close matches, then known names.

One wording for every caller (``dataset``, ``versions``, ``tag``, ``pin``, ``rm``, ``samples()``
in SQL), so a mistyped name reads the same whichever command met it.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import DloadError, InvalidNameError, NotFoundError, user_stacklevel
from dload_arrow.repository.strays import (
    find_copies,
    mixed_folder,
    nested_folder,
    nested_folders,
    stray_folder,
    valid_name,
)

if TYPE_CHECKING:
    from dload_arrow.storage import Storage

__all__ = ["SHOWN_NAMES", "dangling_refs", "elsewhere", "lost_refs", "published_names",
           "refuse_new_name", "removed_dataset", "unknown_dataset", "unreadable_dataset"]

SHOWN_NAMES = 10  # known names listed at most; the rest are counted
_LOST = "has lost its latest ref"  # removed_dataset's text for it, which lost_refs warns of
# A reader meeting another process's rm or commit half way sees what an interrupted one left
_RUNNING = " (unless an rm or commit of it is still running in another process: then retry " \
    "in a moment)"


def unknown_dataset(name: str, known: list[str], where: str, unpublished: int = 0) -> str:
    """Say that ``where`` holds no dataset ``name``, offering the closest of ``known`` first.

    Args:
        name: the name asked for.
        known: every dataset name under the root, sorted.
        where: the root, as it may be printed (credentials removed).
        unpublished: manifests of ``name`` that no ref points at (a commit that stored its
            manifest and stopped before moving ``latest``): then that is what the text says.

    Returns:
        e.g. "no dataset 'simpel' under file:///r. Did you mean 'simple'? Known datasets:
        simple, a1, ... and 3 more (`dload ls`). Create it with repo.commit() or `dload commit`."
    """
    if unpublished:
        return (f"no dataset {name!r} under {where}: {name!r} has {unpublished} unpublished "
                "version(s) (a commit that did not finish, unless one is still running in "
                "another process: then retry in a moment): commit again to publish, or "
                f"`dload rm {name} --yes` to remove them")
    same = [k for k in known if k.lower() == name.lower()]  # 'PHOTOS': difflib minds case
    by_lower = {k.lower(): k for k in known}
    close = same + [by_lower[c] for c in difflib.get_close_matches(
        name.lower(), list(by_lower), n=3, cutoff=0.6) if by_lower[c] not in same][:3 - len(same)]
    if not known:
        hint = " The root has no datasets yet."
    else:
        shown = (close + [k for k in known if k not in close])[:SHOWN_NAMES]
        more = f" and {len(known) - len(shown)} more" if len(known) > len(shown) else ""
        did = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        hint = f"{did} Known datasets: {', '.join(shown)}{more} (`dload ls`)."
    return f"no dataset {name!r} under {where}.{hint} Create it with repo.commit() or " \
           "`dload commit`."


def removed_dataset(storage: Storage, name: str, where: str,
                    left: Sequence[str] = ()) -> str | None:
    """Say that ``name`` was removed, when and by whom, and how to see its history (``rm``
    of a dataset keeps its log and removal records); None when it has no log (never was).

    ``left``: the versions whose manifests are still stored with no ref. When ``latest``'s
    last move deleted it and they have removal records (``rm`` of a dataset writes them
    before it deletes a ref), that is an ``rm`` cut off before it deleted them; else None:
    a commit that stopped before publishing (:func:`unknown_dataset`'s text)."""
    from dload_arrow.store.names import not_portable
    from dload_arrow.store.refs import read_log

    try:
        moves = [e for e in read_log(storage, name) if e.ref == "latest"]
    except DloadError:  # an invalid name, an unreadable entry: the plain "no dataset" text
        return None
    if not moves:
        return None
    last = moves[-1]
    vid = (last.version or last.previous or "")[:12]
    from dload_arrow.store.removals import when_text

    when = when_text(last.time)
    by = f" by {last.user}@{last.host}" if last.user else ""
    # a name stored before the names a new dataset may take were checked: not offered again
    again = "" if not_portable(name) else f", or commit to {name!r} to publish a version again"
    if left and last.action != "delete" and last.version in left:  # published, then lost
        if any(_removed_then(storage, name, v) for v in left):  # an rm cut off before its log
            return (f"dataset {name!r} under {where} is half removed: an rm deleted its latest "
                    f"ref and stopped with {len(left)} version(s) left{_RUNNING}; run `dload rm "
                    f"{name} --yes` (repo.rm({name!r})) again to finish{again}")
        return (f"dataset {name!r} under {where} {_LOST} (the object "
                f"datasets/{name}/refs/latest is missing), though its log says it last pointed "
                f"at {vid} ({last.action}, {when}{by}), a version still stored{_RUNNING}: "
                f"restore the ref with `dload tag {name}@{vid} latest` (repo.tag({name!r}, "
                f"{vid!r}, 'latest'))")
    if left:
        if last.action != "delete" or not any(_removed_then(storage, name, v) for v in left):
            return None
        return (f"dataset {name!r} under {where} is half removed: an rm deleted its latest "
                f"({when}{by}) and stopped with {len(left)} version(s) left{_RUNNING}; run "
                f"`dload rm {name} --yes` (repo.rm({name!r})) again to finish{again}")
    see = f"`dload log {name}@{vid}` (repo.lineage({name!r}, {vid!r}))" if vid else \
        f"`dload sql \"select * from log where name = '{name}'\"`"
    tail = f". Commit to {name!r} to create it again" if again else ""
    for folder in nested_folders(o.path for o in storage.list(f"datasets/{name}/"))[:1]:
        tail = f"; {nested_folder(storage, folder, 'its versions are not read')}"  # (65b: a
        # backup moved back into the folder the rm left, not a new commit, is the fix)
    return (f"dataset {name!r} under {where} was removed ({when}{by}); its log and lineage "
            f"are kept: {see} shows them{tail}")


def published_names(storage: Storage, where: str,
                    listed: Callable[[list[str]], None] | None = None) -> list[str]:
    """The names under the root whose ``latest`` ref exists, sorted; a name whose ref was
    lost (:func:`lost_refs`) is warned about. ``listed`` is given every manifest id the
    listing showed (they exist: no HEAD for them later, QA scale62)."""
    names: set[str] = set()
    left: dict[str, list[str]] = {}
    listing = storage.list("datasets/")
    for obj in listing:
        parts = obj.path.split("/")
        if len(parts) == 4 and parts[2] == "refs" and parts[3] == "latest":
            names.add(parts[1])
        elif len(parts) == 4 and parts[2] == "manifests" and parts[3].endswith(".arrow"):
            left.setdefault(parts[1], []).append(parts[3][: -len(".arrow")])
    copies, mixed = find_copies(storage, {n: v for n, v in left.items() if valid_name(n)})
    # (a file manager's copy: `p1 copy`; `cp -r` to p1.bak; copies merged into a dataset's
    # folder; a folder moved inside one: QA review65)
    for bad in [n for n in names | left.keys() if not valid_name(n)] + sorted(copies):
        warnings.warn(str(stray_folder(storage, bad, "it is not listed", copies.get(bad))),
                      stacklevel=user_stacklevel())
        names.discard(bad)
        left.pop(bad, None)
    for text in [mixed_folder(storage, n, *got) for n, got in sorted(mixed.items())] + [
            str(nested_folder(storage, f, "its versions are not listed"))
            for f in nested_folders(o.path for o in listing)]:
        warnings.warn(text, stacklevel=user_stacklevel())
    lost_refs(storage, {n: v for n, v in left.items() if n not in names}, where)
    if listed is not None:
        listed([v for vids in left.values() for v in vids])
    return sorted(names)


def refuse_new_name(storage: Storage, name: str, where: str) -> None:
    """Refuse to create dataset ``name`` (its first commit) where it differs from a dataset of
    the root only in case (``Label`` beside ``label``: one folder on macOS and Windows, where
    the two would overwrite each other), or could not be a file name on Windows."""
    from dload_arrow.store.names import not_portable

    why = not_portable(name)
    if why:
        raise InvalidNameError(f"dataset name {name!r} is not allowed for a new dataset: {why}; "
                               "choose another name, e.g. 'imagenet-small'")
    twin = next((k for k in published_names(storage, where)
                 if k != name and k.lower() == name.lower()), None)
    if twin is not None:
        raise InvalidNameError(
            f"dataset {name!r} differs from {twin!r} under {where} only in case: on a "
            "case-insensitive filesystem (macOS, Windows) both are one folder, and each "
            f"would overwrite the other's versions. Commit to {twin!r}, or choose another name")


def lost_refs(storage: Storage, left: dict[str, list[str]], where: str) -> None:
    """Warn about each dataset of ``left`` (name: its stored versions, for names with no
    ``latest`` ref) whose ref object was lost after its log published one of them: it is not
    listed (``datasets()``), and would vanish without a word."""
    for name, vids in sorted(left.items()):
        text = removed_dataset(storage, name, where, left=vids)
        if text is not None and _LOST in text:
            warnings.warn(f"{text}; until then it is not listed", stacklevel=user_stacklevel())


def _removed_then(storage: Storage, name: str, vid: str) -> bool:
    """Whether ``vid`` is a version an rm meant to remove: it has a removal record, written
    after its manifest was stored (rm writes the record of a stored version). The same rows
    committed again after a finished rm get the same id, and so the same record, but a
    manifest stored after it: an unfinished commit, not a half-done rm. Both times are the
    storage's own, so writers' clocks do not matter."""
    from dload_arrow.store.names import manifest_path
    from dload_arrow.store.removals import removal_path

    try:
        recorded = storage.info(removal_path(name, vid)).mtime
    except (NotFoundError, OSError):
        return False
    try:
        stored = storage.info(manifest_path(name, vid)).mtime
    except (NotFoundError, OSError):  # gone meanwhile: as the rm left it
        return True
    return not stored or not recorded or stored <= recorded


def dangling_refs(storage: Storage, name: str, where: str) -> str | None:
    """The text for ``name`` whose refs all point at manifests that are gone (an interrupted
    rm of its last version, or an rm that raced an append): not removed, and ``rm`` ends it.
    None when ``name`` has no refs."""
    from dload_arrow.store.refs import list_refs

    refs = list_refs(storage, name)
    if not refs:
        return None
    points = ", ".join(f"{r} -> {v.version[:12]}" for r, v in sorted(refs.items()))
    return (f"dataset {name!r} under {where} has refs but no stored version ({points}: an "
            f"interrupted rm, or an rm that raced an append){_RUNNING}; run `dload rm {name} "
            f"--yes` (repo.rm({name!r})) to remove what is left")


def elsewhere(repo: Any, name: str, version: str) -> str:
    """Where an id prefix that ``name`` lacks is a version of another dataset, as a sentence
    (QA curation66, eval66: such a mistake read as "has no version"); "" otherwise."""
    try:
        owner, full = repo.find_version(version)
    except DloadError:  # (not an id prefix, none, or several: no more said)
        return ""
    return "" if owner == name else (
        f"it is a version of {owner!r}, not of {name!r}: a version id belongs to one dataset; "
        f"name it {owner}@{full[:12]} (repo.dataset({owner!r}, {full[:12]!r}))")


def unreadable_dataset(storage: Storage, name: str, where: str) -> str:
    """Why ``name`` seems to have no versions when a folder of it cannot be read by this
    user (another user's, umask 077): said so, not "create it" nor "rm it"; "" otherwise."""
    storage.list(f"datasets/{name}/")  # (what the listing leaves out, it notes)
    folders = [p for p in getattr(storage, "unreadable", tuple)()
               if p == f"datasets/{name}" or p.startswith(f"datasets/{name}/")]
    if not folders:
        return ""
    return (f"{folders[0]!r} under {where} cannot be read by this user, so the versions of "
            f"{name!r} cannot be told; ask its owner to make it readable (chmod -R g+rX), or "
            "run as its owner")
