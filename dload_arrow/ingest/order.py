"""The order of a streamed archive: each sample's files together, and samples in key order.

A tar is read as a stream. When each sample's files are adjacent (as webdataset writes them)
its samples come in archive order, one at a time; the version id depends on the order, so a
tar whose samples are not sorted by key gets another id than its folder
(:class:`UnsortedWarning`). A tar made the usual way (``tar -czf x.tar.gz .``) lists files in
the filesystem's order, which scatters a sample's files: then each file is held in memory from
where it passes until its sample is complete (:func:`stream_order`), and the samples come in
key order, the folder's order and id, where the files held at once fit in a quarter of the
available memory; else in the order they complete (warned), else the tar is refused up front,
with the command that rewrites it in key order.

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

__all__ = ["UnsortedWarning", "check_adjacent", "key_order_command", "peak_held", "stream_order",
           "warn_unsorted"]

_HOLD_FALLBACK = 1 << 30  # bytes a scattered tar may hold where the memory cannot be told


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


def stream_order(entries: Sequence[Entry], groups: dict[str, dict[str, Entry]], split: str,
                 where: str) -> dict[str, dict[str, Entry]]:
    """The order a tar's samples are read in (the module docstring), ``groups`` reordered.

    Args:
        entries: the archive's files in archive order (``Entry.ref``: the position).
        groups: its samples, ``key -> {column: entry}``.
        split: where a file name's extension starts (``"last"`` or ``"first"``).
        where: the archive, as errors and warnings name it.

    Raises:
        SchemaError: the files held at once would not fit (:func:`check_adjacent`'s text).
    """
    if _first_stray(entries, split) is None:  # adjacent: streamed in archive order
        warn_unsorted(list(groups), split, where)
        return groups
    limit = _hold_limit()
    by_key = dict(sorted(groups.items()))
    if peak_held(by_key) <= limit:
        return by_key
    by_end = dict(sorted(groups.items(), key=lambda kv: max(e.ref for e in kv[1].values())))
    need = peak_held(by_end)
    if need <= limit:
        warn_unsorted(list(by_end), split, where)
        return by_end
    check_adjacent(entries, split, where, held=(need, limit))
    raise AssertionError("unreachable: the files are not adjacent")


def peak_held(groups: dict[str, dict[str, Entry]]) -> int:
    """The most bytes held at once reading a tar's files in archive order (``Entry.ref``) and
    handing out ``groups`` in their dict order: a file is held from where it passes until its
    sample is handed out, which is once it and every sample before it are complete."""
    order = list(groups)
    rank = {k: i for i, k in enumerate(order)}
    left = {k: len(g) for k, g in groups.items()}
    bytes_of = dict.fromkeys(order, 0)
    events = sorted((e.ref, k, e.size) for k, g in groups.items() for e in g.values())
    complete = [False] * len(order)
    held = peak = nxt = 0
    for _, key, size in events:
        held += size
        bytes_of[key] += size
        peak = max(peak, held)
        left[key] -= 1
        if not left[key]:
            complete[rank[key]] = True
            while nxt < len(order) and complete[nxt]:
                held -= bytes_of[order[nxt]]
                nxt += 1
    return peak


def _hold_limit() -> int:
    """A quarter of the memory available (``DLOAD_MEMORY_LIMIT`` counts), else 1 GiB."""
    from dload_arrow.read.memory import available_memory

    free = available_memory()
    return _HOLD_FALLBACK if free is None else free // 4


def check_adjacent(entries: Sequence[Entry], split: str, where: str,
                   held: tuple[int, int] | None = None) -> None:
    """SchemaError if a sample's files are not adjacent in ``entries`` (archive order);
    ``held``: the bytes reading them in order would hold at once, and the limit."""
    stray = _first_stray(entries, split)
    if stray is None:
        return
    name, key = stray
    from dload_arrow.sizes import format_bytes

    memory = "" if held is None else (
        f", and holding each file until its sample is complete would take "
        f"{format_bytes(held[0])} of memory at once, more than the {format_bytes(held[1])} "
        "allowed (a quarter of what is available; DLOAD_MEMORY_LIMIT sets it)")
    first = (" With --split first (split='first' in Python) they are: the extension starts "
             "at the first dot (webdataset names such as x.seg.png)."
             if split == "last" and _first_stray(entries, "first") is None else "")
    raise SchemaError(
        f"{where}: entry {name!r} belongs to sample {key!r} whose other files came earlier, "
        f"separated by other samples{memory}; a tar is read as a stream, so a sample's files "
        f"must then be adjacent.{first} Commit the extracted folder (or a zip of it), or "
        f"rebuild the tar in key order, inside the folder: {key_order_command(split)} "
        "(`tar --sort=name` sorts names, not keys)"
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
