"""The order of a streamed archive: each sample's files adjacent, and samples in key order.

A tar is read as a stream, so a sample's files must be adjacent (else the archive is refused)
and its samples come in archive order; the version id depends on the order, so a tar whose
samples are not sorted by key gets another id than its folder (:class:`UnsortedWarning`).

``tar --sort=name`` does not write key order: it sorts each directory's names, and a key is a
name without its extension, so ``cat-2.jpg`` comes before ``cat.jpg`` (``-`` sorts before
``.``) although key ``cat`` sorts before ``cat-2``, a folder ``a/`` comes before ``a.bin``,
and ``img.seg.png`` can fall between ``img.jpg`` and ``img.txt``. :func:`key_order_command`
gives a shell command that sorts the file list by (key, name) before tar reads it.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence

from dload_arrow.errors import SchemaError, user_stacklevel
from dload_arrow.ingest.grouping import Entry, split_name

__all__ = ["UnsortedWarning", "check_adjacent", "key_order_command", "warn_unsorted"]


class UnsortedWarning(UserWarning):
    """A tar's samples are not in key order: its version id differs from its folder's."""


def key_order_command(split: str = "last", out: str = "../data.tar") -> str:
    """A shell command, run inside the folder, that writes a tar in key order.

    Each file's key goes in front of its name (awk drops the extension: from the last dot of
    the file name, or the first with ``split="first"``), a byte-order sort (``LC_ALL=C``: the
    order of Python's str comparison for UTF-8) sorts by key then name, and tar takes the
    names in that order. A tab sorts before any printable character, so ``cat`` comes before
    ``cat-2`` as in Python; a tab inside a key reads as a vertical tab there, so the first tab
    is the one awk put. Names go NUL-separated from ``find`` to ``tar``: a newline in a name
    is kept.
    """
    ext = r"\.[^/]*$" if split == "first" else r"\.[^./]*$"
    return (f"find . -type f -print0 | sed -z 's,^\\./,,' | awk 'BEGIN{{RS=ORS=\"\\0\"}} "
            f"{{k=$0; sub(/{ext}/, \"\", k); gsub(/\\t/, \"\\v\", k); "
            f"print k \"\\t\" $0}}' | LC_ALL=C sort -z | cut -z -f2- | "
            f"tar -cf {out} --no-recursion --null --no-unquote -T -")


def check_adjacent(entries: Sequence[Entry], split: str, where: str) -> None:
    """SchemaError if a sample's files are not adjacent in ``entries`` (archive order)."""
    stray = _first_stray(entries, split)
    if stray is None:
        return
    name, key = stray
    first = (" With --split first (split='first' in Python) they are: the extension starts "
             "at the first dot (webdataset names such as x.seg.png)."
             if split == "last" and _first_stray(entries, "first") is None else "")
    raise SchemaError(
        f"{where}: entry {name!r} belongs to sample {key!r} whose other files came earlier, "
        f"separated by other samples; a tar is read as a stream, so a sample's files must be "
        f"adjacent.{first} Commit the extracted folder (or a zip of it), or rebuild the tar "
        f"in key order, inside the folder: {key_order_command(split)} (`tar --sort=name` "
        "sorts names, not keys)"
    )


def _first_stray(entries: Sequence[Entry], split: str) -> tuple[str, str] | None:
    """``(name, key)`` of the first entry whose sample's files came earlier, else None."""
    closed: set[str] = set()
    current = None
    for e in entries:
        parsed = split_name(e.name, split)
        if parsed is None or parsed[0] == current:
            continue
        if parsed[0] in closed:
            return e.name, parsed[0]
        if current is not None:
            closed.add(current)
        current = parsed[0]
    return None


def warn_unsorted(keys: Sequence[str], split: str, where: str) -> None:
    """Warn that a stream's samples are not in key order (the caller warns once).

    A folder or zip yields its samples sorted by key and a tar in archive order, and the
    version id depends on the order; sorting here would mean buffering the archive or
    reading it once per sample, so the user is told instead.
    """
    for before, after in itertools.pairwise(keys):
        if after < before:
            warnings.warn(
                f"{where}: its samples are not sorted by key ({before!a} comes before "
                f"{after!a}), so its version id differs from the one the same files get from "
                "a folder or a zip; to get the same id, commit the extracted folder, or "
                f"rebuild the tar in key order, inside the folder: {key_order_command(split)} "
                "(`tar --sort=name` sorts names, not keys)",
                UnsortedWarning, stacklevel=user_stacklevel())
            return
