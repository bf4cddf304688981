"""How files become samples: safe entry names, keys, columns, and the ingestion report.

A file's key is its path without the extension and its column is the extension, lowercased:
``a/x.wav`` and ``a/x.json`` make one sample ``a/x`` with columns ``wav`` and ``json``. With
``split="first"`` the extension starts at the first dot of the file name (the webdataset
convention: ``x.seg.png`` -> key ``x``, column ``seg.png``). Files without an extension,
hidden files and files inside hidden directories (``.git/``, ``.ipynb_checkpoints/``) do not
fit and are reported, not ingested. A file whose extension is ``__key__`` is refused: that
column holds the sample keys.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dload_arrow.errors import (
    ConfigError,
    InvalidNameError,
    SchemaError,
    UnsafePathError,
)
from dload_arrow.ingest.globs import exact_path
from dload_arrow.ingest.group_warnings import (
    COMMIT_MEMORY_FACTOR,
    LargeSampleWarning,
    warn_case_twins,
    warn_dotted_keys,
    warn_large_sample,
    warn_lone_samples,
    warn_split_columns,
    warn_unicode_twins,
)
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["COMMIT_MEMORY_FACTOR", "Entry", "IngestReport", "LargeSampleWarning",
           "check_entry_name", "check_utf8", "group_entries", "split_name"]

@dataclass(frozen=True)
class Entry:
    """One regular file of a directory or an archive; ``ref`` locates it in its source."""

    name: str
    size: int
    ref: Any = None


@dataclass
class IngestReport:
    """What a source holds: samples, per-column counts, and the files that did not fit."""

    samples: int = 0
    columns: dict[str, int] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unused_globs: list[str] = field(default_factory=list)
    """One line per ``--include`` / ``--exclude`` pattern that matched no file."""
    unused_patterns: list[dict[str, str]] = field(default_factory=list)
    """Those patterns themselves: ``{"option": "exclude", "pattern": "cat"}`` (for scripts)."""
    excluded: int = 0
    """How many files the ``--include`` / ``--exclude`` patterns left out (listed ones)."""
    excluded_dirs: list[str] = field(default_factory=list)
    """Folders an ``--exclude`` pattern left out whole (their files are not listed)."""

    def excluded_text(self) -> str:
        """What the globs left out: ``"3 files and 1 folder (tmp/)"``; empty: nothing."""
        parts = [f"{self.excluded} file{'s' * (self.excluded != 1)}"] if self.excluded else []
        if self.excluded_dirs:
            n = len(self.excluded_dirs)
            shown = ", ".join(self.excluded_dirs[:3]) + (", ..." if n > 3 else "")
            parts.append(f"{n} folder{'s' * (n != 1)} ({shown})")
        return " and ".join(parts)

    def skipped_text(self) -> str:
        """``"N skipped"``, then per reason how many, a few names and the fix where there is
        one: ``"2 skipped: 2 encrypted entries (a.jpg, b.jpg): recreate the zip without a
        password"``."""
        by_reason: dict[str, list[str]] = {}
        for name, reason in self.skipped:
            by_reason.setdefault(reason, []).append(name)
        parts = []
        for reason, names in by_reason.items():
            many, one, fix = _SKIP_TEXT.get(reason, (reason, reason, ""))
            what = one if len(names) == 1 else many
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            parts.append(f"{len(names)} {what} ({shown})" + (f": {fix}" if fix else ""))
        return f"{len(self.skipped)} skipped" + (": " + "; ".join(parts) if parts else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "columns": dict(self.columns),
            "unmatched": list(self.unmatched),
            "skipped": [{"name": n, "reason": r} for n, r in self.skipped],
            "unused_globs": list(self.unused_globs),
            "unused_patterns": list(self.unused_patterns),
            "excluded": self.excluded,
            "excluded_dirs": list(self.excluded_dirs),
        }


# A skip reason -> (how a count of them reads, of one, the fix or "").
_SKIP_TEXT = {
    "encrypted": ("encrypted entries", "encrypted entry", "recreate the zip without a password"),
    "symbolic link (not followed)": (
        "symbolic links, not followed", "symbolic link, not followed", "copy the files they "
        "point to in their place (a tar: recreate it with `tar --dereference`)"),
    "hard link to no earlier file": (
        "hard links in a tar to no file stored before them", "hard link in a tar to no file "
        "stored before it", "recreate the tar with `tar --hard-dereference` to store each "
        "name's data"),
    "hidden directory (not read)": ("hidden directories, not read",
                                    "hidden directory, not read", ""),
    "dload's own data (not read)": (
        "folders of dload's own data (a dload root or cache), not read",
        "folder of dload's own data (a dload root or cache), not read", ""),
    "not a regular file": ("entries that are not regular files",
                           "entry that is not a regular file", ""),
}


_DRIVE = re.compile(r"[A-Za-z]:")


def check_entry_name(name: str, where: str) -> str:
    """The normalised relative name of an archive entry; UnsafePathError if it could escape.

    Absolute paths, drive letters, ``..`` segments and NUL characters are refused (zip slip).
    Backslashes count as separators, ``.`` and empty segments are dropped.
    """
    raw = name
    name = name.replace("\\", "/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    # The drive letter is looked for once './' is dropped ('./C:/x' is 'C:/x'), and only a
    # letter alone before the first separator makes one ('C:', 'C:/x', 'C:\\x'): 'a:b.jpg' and
    # '1:a.jpg' are plain Linux names, read from a folder as they are (export still checks
    # that each file it writes stays inside its target, so Windows' 'C:x' cannot escape).
    if "\x00" in name or name.startswith("/") or (parts and _DRIVE.fullmatch(parts[0])):
        what = "holds a NUL byte" if "\x00" in name else "has an absolute path"
        raise UnsafePathError(
            f"{where}: entry {raw!r} {what}; refusing the archive (it could write "
            "outside its target). Recreate it with relative names"
        )
    if ".." in parts:
        raise UnsafePathError(
            f"{where}: entry {raw!r} contains '..'; refusing the archive (it could write "
            "outside its target). Recreate it with plain relative names"
        )
    return "/".join(parts)


def check_utf8(name: str, where: str) -> str:
    """``name`` if it is text; InvalidNameError naming the file if it is not UTF-8.

    A folder's and a tar's names are bytes: Python reads the ones that are not UTF-8 with
    surrogates (``caf\udce9``), which no key, report or JSON can hold. Guessing the encoding
    (latin-1? CP1252?) would give another key than the user sees, so the file is named and
    refused.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "surrogateescape")
        raise InvalidNameError(
            f"{where}: the file name {raw!r} is not UTF-8, and keys are text; rename it to "
            "UTF-8 (e.g. `convmv -f latin1 -t utf8 -r --notest DIR`; for an archive, over "
            "its extracted files, then archive them again), or leave it out with --exclude"
        ) from None
    return name


# Files a file manager leaves beside photos (QA ingest61: Windows' became samples with no
# image; macOS's are hidden): never a sample's column.
OS_JUNK = frozenset({"thumbs.db", "ehthumbs.db", "ehthumbs_vista.db", "desktop.ini"})
OS_JUNK_DIRS = frozenset({"$RECYCLE.BIN", "System Volume Information"})


def split_name(name: str, split: str = "last") -> tuple[str, str] | None:
    """``(key, column)`` of a relative file name, or None when it has no usable extension.

    Hidden files, files inside hidden directories and a system's own files (``Thumbs.db``,
    ``desktop.ini``, ``~$doc.docx`` locks, ``x.jpg:Zone.Identifier``, ``$RECYCLE.BIN/``,
    macOS's ``Icon\r``) give None too.
    """
    directory, base = posixpath.split(name)
    if not base or base.startswith(".") or any(p.startswith(".") for p in directory.split("/")):
        return None
    if base.lower() in OS_JUNK or base == "Icon\r" or base.startswith("~$") or base.endswith(
            ":Zone.Identifier") or any(p in OS_JUNK_DIRS for p in directory.split("/")):
        return None  # Windows' (Office's open-file locks, WSL's download marks) and macOS's
    if split == "first":
        stem, dot, ext = base.partition(".")
    elif split == "last":
        stem, dot, ext = base.rpartition(".")
    else:
        raise ConfigError(f"split must be 'first' or 'last', not {split!r}")
    if not dot or not stem or not ext:
        return None
    key = f"{directory}/{stem}" if directory else stem
    return key, ext.lower()


def group_entries(
    entries: Iterable[Entry], split: str, where: str, report: IngestReport
) -> dict[str, dict[str, Entry]]:
    """Samples ``key -> {column: entry}`` in first-seen order; misfits go to ``report``."""
    groups: dict[str, dict[str, Entry]] = {}
    for entry in entries:
        parsed = split_name(entry.name, split)
        if parsed is None:
            report.unmatched.append(entry.name)
            continue
        key, column = parsed
        if column == KEY_COLUMN:
            raise SchemaError(
                f"{where}: file {entry.name!r} would make a column named {KEY_COLUMN!r}, the "
                "column that holds the sample keys; rename the file, or leave it out with "
                f"--exclude '*.{entry.name.rsplit('.', 1)[-1]}' (exclude=[...] in Python)"
            )
        sample = groups.setdefault(key, {})
        if column in sample and sample[column].name == entry.name:
            raise SchemaError(
                f"{where}: the archive holds the entry {entry.name!r} twice (the same path; "
                "'./' and repeated '/' dropped, backslashes read as '/'), and a sample has one "
                "file per column; rebuild the archive without the duplicate entry (extract it, "
                "keep the copy you want, and archive it again)"
            )
        if column in sample:
            raise SchemaError(
                f"{where}: {sample[column].name!r} and {entry.name!r} both give column "
                f"{column!r} of sample {key!r} (extensions compare case-insensitively, in "
                "globs too); rename one, or leave one out by its exact path from the top, "
                f"which compares as written: --exclude {exact_path(entry.name)!r} "
                "(exclude=[...] in Python)"
            )
        sample[column] = entry
    warn_unicode_twins(groups, where)
    dotted = warn_dotted_keys(groups, split, where)
    if not warn_case_twins(groups, where) and not dotted:
        warn_split_columns(groups, where)
    warn_large_sample(groups, where)
    warn_lone_samples(groups, where)
    report.samples = len(groups)
    counts: dict[str, int] = {}
    for sample in groups.values():
        for column in sample:
            counts[column] = counts.get(column, 0) + 1
    report.columns = dict(sorted(counts.items()))
    return groups
