"""The hints of an append's refusals and warnings: files of another column than the
dataset's (a split, another format), and what nulls do to torch batches."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from dload_arrow.store.rows import SHAPE_META

__all__ = ["extra_hint", "in_torch"]


def _split_hint(extra: list[str], names: set[str]) -> str:
    """How the files were split when the dataset's columns are those of the other ``split``:
    ``x.seg.png`` is column ``seg.png`` with ``--split first`` and ``png`` without. Excluding
    the files instead would leave the stored column null in every new row."""
    dotted = sorted(n for n in names if "." in n)
    fits = [n for n in dotted if any(n.endswith("." + c) for c in extra)]
    if fits:
        return (f"its columns {fits} were read with --split first (split='first' in Python: "
                "the extension starts at the first dot, x.seg.png -> 'seg.png'): append with "
                "--split first; otherwise ")
    if not dotted and all("." in c and c.rsplit(".", 1)[1] in names for c in extra):
        return ("its columns were read with the extension after the last dot (x.seg.png -> "
                "'png'): append without --split first (split='last' in Python); otherwise ")
    return ""


def extra_hint(extra: list[str], files: bool, keyed: bool, names: set[str],
                missing: Sequence[str] = ()) -> str:
    if files:
        globs = " ".join(f"--exclude '*.{c}'" for c in extra)
        if missing and not _split_hint(extra, names):  # .png files, where the dataset has jpg
            return (f"no new file is of the stored column(s) {missing}: if the .{extra[0]} "
                    f"files hold what {missing[0]!r} holds (another format), convert or rename "
                    f"them to .{missing[0]} (leaving them out, {globs}, would append every row "
                    f"without {missing[0]!r})")
        return f"{_split_hint(extra, names)}leave those files out ({globs})"
    drop = "drop those columns from the table"
    if len(extra) == 1 and not keyed:
        # The usual cause: the dataset was committed with --key-column, which moves that
        # column into __key__, and this append forgot it (its rows would get row numbers).
        c = extra[0]
        return (f"if {c!r} holds the keys (a commit with --key-column {c} stores them in "
                f"__key__, not as a column), append with --key-column {c} (key={c!r} in "
                f"Python); otherwise drop it from the table")
    return drop


def in_torch(stored: pa.Schema, names: Sequence[str]) -> str:
    """What nulls do to the torch batches of ``names`` when one is a number or tensor column
    (text, bytes and lists are lists there anyway)."""
    if not any(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
               or SHAPE_META in (stored.field(n).metadata or {})
               or pa.types.is_fixed_size_list(t)
               for n in names if n in stored.names for t in [stored.field(n).type]):
        return ""
    return (" (torch then gives such a column as a list, not a tensor, in a batch holding "
            "them)")
