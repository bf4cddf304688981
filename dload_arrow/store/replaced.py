"""A whole-version commit that replaced a ``latest`` it never saw, and ``if_latest``.

A commit (not an append) makes a version of exactly its samples and moves ``latest`` to it,
whatever ``latest`` held: two commits race as last-writer-wins. An append published while the
commit ran is then left out of ``latest`` (its version stays stored, and listed). That was
silent (QA infer60: a compaction, ``repo.commit(name, ds.to_arrow())``, dropped a day's
append that had been acknowledged). Now the commit warns when ``latest`` moved between its
start and its publish, and ``if_latest=VERSION`` publishes only while ``latest`` is still that
version: a read-modify-write job (compaction, a fix, a re-derivation) names the version its
input was read from, and a conflict publishes nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from dload_arrow.errors import ConflictError, NotFoundError, user_stacklevel

if TYPE_CHECKING:
    from dload_arrow.store.manifest import Manifest

_STEPS = 10_000  # appends followed back from a replaced version

__all__ = ["moved_error", "warn_rolled_back", "warn_replaced"]


def warn_replaced(name: str, seen: str | None, replaced: str | None, new: str,
                  action: str = "commit", seen_removed: bool = False) -> None:
    """Warn that ``action`` moved ``latest`` of ``name`` to ``new`` from ``replaced``, a
    version it did not start from (``seen``: ``latest`` when it started). Not when ``seen``
    was removed meanwhile (``seen_removed``): ``latest`` stepped back to an older version,
    which the commit replaces as it would have replaced ``seen``."""
    if replaced is None or replaced in (seen, new) or seen_removed:
        return
    start = f"from {seen[:12]} " if seen else "(the dataset was new) "
    warnings.warn(
        f"{action} of {name!r}: latest moved {start}to {replaced[:12]} while this {action} ran "
        f"(another writer's commit or append), and this {action} replaced it with {new[:12]}: "
        f"rows that version added are not in latest unless these samples hold them. It stays "
        f"stored (`dload versions {name}`, `dload diff {name}@{replaced[:12]} "
        f"{name}@{new[:12]}`); to publish only while latest is the version the data was read "
        "from, pass if_latest=VERSION (`--if-latest VERSION`)",
        stacklevel=user_stacklevel())


def moved_error(name: str, wanted: str, current: str | None, stored: bool) -> ConflictError:
    """The refusal of a commit whose ``if_latest`` is no longer ``latest`` (``stored``: its
    shards are uploaded, and a rerun reuses them)."""
    now = current[:12] if current else "gone (the dataset was removed)"
    kept = (" Its shards are stored: committing the same samples again uploads none of them."
            if stored else "")
    return ConflictError(
        f"commit to {name!r} with if_latest (--if-latest) {wanted[:12]}: latest is now {now}, "
        f"so nothing was published.{kept} Read latest again (repo.dataset({name!r}, "
        f"'latest'); `dload diff {name}@{wanted[:12]} {name}@latest` shows what changed), "
        "rebuild the samples from it and commit with the new version as if_latest (a "
        "retry of a commit that published, with its same samples, is taken as done)")


def warn_rolled_back(name: str, replaced: str, back_to: Manifest,
                     manifest: Callable[[str], Manifest]) -> None:
    """Warn when a memoized ``derive`` pointed ``latest`` of ``name`` back at its version
    ``back_to`` from ``replaced``, an append (or appends) onto it: the appended rows left
    ``latest`` silently (QA infer60: a day's predictions appended to a derived dataset)."""
    if replaced == back_to.version:
        return
    vid, steps = replaced, 0
    while vid != back_to.version and steps < _STEPS:
        try:
            up = [p for p in manifest(vid).parents if p.get("relation") == "append"]
        except NotFoundError:  # removed: its appends are no longer anyone's latest
            return
        if not up:
            return  # another commit or derive replaced it: the user asked for this one
        vid, steps = up[0]["version"], steps + 1
    if vid != back_to.version:
        return
    rows = manifest(replaced).num_rows - back_to.num_rows
    warnings.warn(
        f"derive of {name!r}: latest was {replaced[:12]}, {steps} append(s) of {rows} rows onto "
        f"this pipeline's version {back_to.version[:12]}, and points back at that version now, "
        f"as derive does for a pipeline it computed before: the appended rows are not in "
        f"latest. {replaced[:12]} stays stored (`dload tag {name}@{replaced[:12]} NAME` keeps "
        "a name on it); derive a pipeline over the new inputs instead of appending to a "
        "derived dataset, or commit the appended rows under another name",
        stacklevel=user_stacklevel())
