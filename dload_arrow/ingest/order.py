"""The order of a streamed archive: each sample's files together, and samples in key order.

A tar is read as a stream, its files in archive order. Each file is held in memory from where
it passes until its sample is complete and every sample before it is out, so the samples can
come in key order, the order (and so the version id) of the same files in a folder or a zip,
whatever order the tar lists them in (``tar -czf x.tar.gz .`` lists the filesystem's). That
is done where it holds at most :data:`HOLD_CAP` (256 MiB) of files at once, always for a
smaller tar. A larger tar whose samples' files are adjacent (as webdataset writes them) streams in
archive order, one sample at a time; one whose files are scattered comes in the order its
samples complete, if that holds at most the cap, else it is refused with the command that
rewrites it in key order. Both are warned (:class:`UnsortedWarning`: another id than the
folder's). The cap is a constant so that the order is the same on every machine; a quarter of
the memory available (``DLOAD_MEMORY_LIMIT``) only decides whether it may run here.

``tar --sort=name`` does not write key order: it sorts each directory's names, and a key is a
name without its extension, so ``cat-2.jpg`` comes before ``cat.jpg`` (``-`` sorts before
``.``) although key ``cat`` sorts before ``cat-2``, a folder ``a/`` comes before ``a.bin``,
and ``img.seg.png`` can fall between ``img.jpg`` and ``img.txt``. :func:`key_order_command`
gives a shell command that sorts the file list by (key, name) before tar reads it.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence

from dload_arrow.errors import SchemaError, user_stacklevel
from dload_arrow.ingest.grouping import Entry, split_name
from dload_arrow.sizes import format_bytes

__all__ = ["HOLD_CAP", "UnsortedWarning", "check_adjacent", "key_order_command", "peak_held",
           "stream_order", "warn_unsorted"]

# The most bytes of files a tar's stream may hold to give its samples in key order: a
# constant, so that the order, and so the version id, is the same on every machine; small
# enough for any machine that trains (a quarter of 1 GiB available), so that a shuffled
# webdataset tar that streamed one sample at a time is not refused where memory is short.
HOLD_CAP = 256 << 20


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
                 where: str, links: Mapping[int, Entry] | None = None
                 ) -> dict[str, dict[str, Entry]]:
    """The order a tar's samples are read in (the module docstring), ``groups`` reordered.

    Key order when it holds at most :data:`HOLD_CAP` bytes of files at once; else archive
    order for a tar whose samples' files are adjacent, the order samples complete for one
    whose files are scattered (both warned: another version id than the folder's). The order
    depends only on the archive, never on the machine: the memory available only decides
    whether the chosen order may run here (refused, never reordered).

    Args:
        entries: the archive's files in archive order (``Entry.ref``: the position).
        groups: its samples, ``key -> {column: entry}``.
        split: where a file name's extension starts (``"last"`` or ``"first"``).
        where: the archive, as errors and warnings name it.
        links: a hard link's position -> its target's entry (held until its last link).

    Raises:
        SchemaError: the files held at once would pass the cap (scattered) or the memory
            available (:func:`check_adjacent`'s text).
    """
    by_key = dict(sorted(groups.items()))
    need = peak_held(by_key, links)
    # one sample is held however the tar is read (a large one is warned of: grouping.py)
    one = max((sum(e.size for e in g.values()) for g in groups.values()), default=0)
    if need <= HOLD_CAP:
        _check_memory(need, one, entries, split, where)
        return by_key
    adjacent = _first_stray(entries, split) is None
    order = groups if adjacent else dict(
        sorted(groups.items(), key=lambda kv: max(e.ref for e in kv[1].values())))
    held = peak_held(order, links)
    if not adjacent and held > HOLD_CAP:
        check_adjacent(entries, split, where, held=(held, HOLD_CAP, "the cap for reading a "
                                                    "tar's samples in another order,"))
    _check_memory(held, one, entries, split, where)
    why = (f" (key order would hold {format_bytes(need)} of its files at once, more than "
           f"{format_bytes(HOLD_CAP)})")
    warn_unsorted(list(order), split, where, why)
    return order


def _check_memory(need: int, one: int, entries: Sequence[Entry], split: str,
                  where: str) -> None:
    """Refuse an order whose files held at once pass a quarter of the memory available, and
    the largest sample (``one``), which any reading holds."""
    allowed = _allowance()
    if allowed is None or need <= max(allowed, one):
        return
    check_adjacent(entries, split, where, held=(need, allowed, "a quarter of the memory "
                                                "available (DLOAD_MEMORY_LIMIT sets it),"))
    raise SchemaError(
        f"{where}: its samples are out of key order, and reading them in key order (the "
        f"order, and version id, of its folder) holds {format_bytes(need)} of its files in "
        f"memory at once, more than the {format_bytes(allowed)} this machine allows (a "
        "quarter of the memory available; DLOAD_MEMORY_LIMIT sets it). Commit the extracted "
        f"folder, or rebuild the tar in key order, inside the folder: {key_order_command(split)}")


def peak_held(groups: dict[str, dict[str, Entry]],
              links: Mapping[int, Entry] | None = None) -> int:
    """The most bytes held at once reading a tar's files in archive order (``Entry.ref``) and
    handing out ``groups`` in their dict order: a file is held from where it passes until its
    sample is handed out, which is once it and every sample before it are complete. A hard
    link's bytes are its target's (``links``: a link's position -> the target's entry), held
    from where the target passes until its last link: one copy however many files share it
    (QA review57b: counted once per name, tars that fit were refused)."""
    order = list(groups)
    rank = {k: i for i, k in enumerate(order)}
    left = {k: len(g) for k, g in groups.items()}
    blobs: dict[str, list[tuple[int, int]]] = {k: [] for k in order}  # (data, size) per file
    # (position, phase, key, data, size): a target's hold begins (0) before the files at its
    # position (1) and ends (2) after its last link
    events: list[tuple[int, int, str, int, int]] = []
    last: dict[int, tuple[Entry, int]] = {}
    for k, g in groups.items():
        for e in g.values():
            t = links.get(e.ref) if links else None
            data = e.ref if t is None else t.ref
            events.append((e.ref, 1, k, data, e.size))
            if t is not None:
                last[t.ref] = (t, max(e.ref, last.get(t.ref, (t, 0))[1]))
    for t, end in last.values():
        events += [(t.ref, 0, "", t.ref, t.size), (end, 2, "", t.ref, t.size)]
    refs: dict[int, int] = {}
    complete = [False] * len(order)
    held = peak = nxt = 0

    def drop(data: int, size: int) -> int:
        refs[data] -= 1
        return size if not refs[data] else 0

    for _, phase, key, data, size in sorted(events):
        if phase == 2:
            held -= drop(data, size)
            continue
        refs[data] = refs.get(data, 0) + 1
        held += size if refs[data] == 1 else 0
        peak = max(peak, held)
        if phase == 0:
            continue
        blobs[key].append((data, size))
        left[key] -= 1
        if not left[key]:
            complete[rank[key]] = True
            while nxt < len(order) and complete[nxt]:
                held -= sum(drop(d, n) for d, n in blobs[order[nxt]])
                nxt += 1
    return peak


def _allowance() -> int | None:
    """A quarter of the memory available (``DLOAD_MEMORY_LIMIT`` counts; None: unlimited,
    or not known)."""
    from dload_arrow.read.memory import available_memory

    free = available_memory()
    return None if free is None else free // 4


def check_adjacent(entries: Sequence[Entry], split: str, where: str,
                   held: tuple[int, int, str] | None = None) -> None:
    """SchemaError if a sample's files are not adjacent in ``entries`` (archive order);
    ``held``: the bytes reading them holds at once, the limit, and what the limit is."""
    stray = _first_stray(entries, split)
    if stray is None:
        return
    name, key = stray
    memory = "" if held is None else (
        f", and holding each file until its sample is complete would take "
        f"{format_bytes(held[0])} of memory at once, more than {held[2]} "
        f"{format_bytes(held[1])}")
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


def warn_unsorted(keys: Sequence[str], split: str, where: str, why: str = "") -> None:
    """Warn that a stream's samples are not in key order (the caller warns once).

    A folder or zip yields its samples sorted by key, and a tar too where that holds at most
    :data:`HOLD_CAP` of its files at once; the version id depends on the order, so a larger
    tar out of key order is told (``why``: what key order would have held).
    """
    for before, after in itertools.pairwise(keys):
        if after < before:
            warnings.warn(
                f"{where}: its samples are not sorted by key ({before!a} comes before "
                f"{after!a}){why}, so its version id differs from the one the same files get from "
                "a folder or a zip; to get the same id, commit the extracted folder, or "
                f"rebuild the tar in key order, inside the folder: {key_order_command(split)} "
                "(`tar --sort=name` sorts names, not keys)",
                UnsortedWarning, stacklevel=user_stacklevel())
            return
