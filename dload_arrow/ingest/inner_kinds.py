"""The refusal of an archive whose samples would each be one whole file's bytes by mistake:
an archive of tables (their rows are read from a file or a folder) or of archives (ImageNet's
train tar of 1,000 class tars), read with ``--as auto``."""

from __future__ import annotations

import glob
import shlex
from collections.abc import Sequence

from dload_arrow.errors import ConfigError
from dload_arrow.ingest.kinds import ARCHIVE_EXTENSIONS, TABLE_FORMATS, is_marker, table_format
from dload_arrow.ingest.location import is_remote

__all__ = ["archive_of_tables", "archive_patterns", "archives_beside_files", "is_archive_name"]


def archive_of_tables(location: str, names: Sequence[str], extract: str) -> ConfigError | None:
    """The error for an archive whose files (``names``) are all tables, or all archives
    (ImageNet's train tar), beside markers and documents, under ``--as auto``: each would be
    stored as one sample's bytes. ``extract``: the shell command that extracts it, with
    ``{name}`` and ``{stem}`` (``unzip {name} -d {stem}``). None for any other archive."""
    tables = [n for n in names if table_format(n)]
    inner = [n for n in names if is_archive_name(n)]
    found = tables or inner
    if not found or (tables and inner) or not all(
            table_format(n) or is_archive_name(n) or is_marker(n) for n in names):
        return None
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    if not extract and inner:  # a folder (QA migrate59: "extract it (``)", then a wrong --as)
        deep = sorted(found, key=lambda n: "/" not in n)  # name one in a subfolder first
        what = (f"is a folder of archives in subfolders ({deep[0]!r}{more}), read" if "/" in
                deep[0] else f"holds only archives once --exclude leaves out its other files "
                f"({deep[0]!r}{more}), but a folder is one of archives only when all its files "
                "are: it is read")
        return ConfigError(
            f"{location!r} {what} as a folder of files: each archive would be stored as one "
            "sample's bytes; read their samples "
            f"with {archive_patterns(location, inner)} (a folder whose files are all archives "
            "is read as their samples), or commit it with --as files to store each file as "
            "one sample's bytes")
    if not extract:
        return ConfigError(
            f"{location!r} is a folder of tables in subfolders ({found[0]!r}{more}): each would "
            "be stored as one sample's bytes; commit each folder on its own (a table folder is "
            "read as one table), or commit it with --as files to store each file as one "
            "sample's bytes")
    name = location.rstrip("/").rsplit("/", 1)[-1]
    stem = name
    while (shorter := _stem(stem)) != stem:  # data.csv.tar.gz -> data
        stem = shorter
    command = extract.format(name=shlex.quote(name), stem=shlex.quote(stem or "data"))
    how = f"download it, then extract it (`{command}`)" if is_remote(location) else \
        f"extract it (`{command}`)"
    if inner:
        return ConfigError(
            f"{location!r} is an archive of archives ({found[0]!r}{more}): each inner archive "
            f"would be stored as one sample's bytes, not read as samples; {how}, then commit "
            "each inner archive (`dload commit NAME --from INNER`, or `dload append` for the "
            "next ones), or extract those too and commit the folder; or commit it with --as "
            "archive to store each inner archive as one sample's bytes")
    return ConfigError(
        f"{location!r} is an archive of tables ({found[0]!r}{more}): tables are read from a "
        f"file or a folder, not from inside an archive; {how} and commit the folder, or "
        "commit it with --as archive to store each file as one sample's bytes")


def archives_beside_files(location: str, names: Sequence[str]) -> ConfigError | None:
    """The error for a folder read under ``--as auto`` whose files are mostly archives beside
    a few others (WebDataset shards with a checksum list, a stats file or a download still
    running, QA ingest61): read as a folder of files, each shard would be one sample's bytes,
    silently. None when archives are not more than the other files (a folder of documents,
    unless checksums sit beside them) or pair with them by name (``pkg0.tar`` beside
    ``pkg0.json``; a checksum beside its shard is no pair). ``names``
    counts symbolic links to archives too (skipped there, read in a folder of archives)."""
    archives = [n for n in names if is_archive_name(n)]
    others = [n for n in names if not is_archive_name(n) and not is_marker(n)]
    sidecars = [n for n in others if n.rsplit(".", 1)[-1].lower() in _SIDECARS]
    plain = [n for n in others if n not in sidecars]
    stems = {_stem(n).lower() for n in archives}
    if len(archives) < 2 or not others or any(n.rsplit(".", 1)[0].lower() in stems
                                              for n in plain):
        return None  # pkg0.tar beside pkg0.json: samples whose column is an archive's bytes
    if not sidecars and len(archives) <= len(plain):
        return None  # (a folder of documents, one or two of them archives)
    s, them = ("s", "them") if len(others) > 1 else ("", "it")
    partial = [n for n in others if n.lower().endswith(_PARTIAL)]
    shown = partial[0] if partial else others[0]
    running = ": a download still running or cut off, let it finish" if partial else ""
    more = f" and {len(archives) - 1} more" if len(archives) > 1 else ""
    return ConfigError(
        f"{location!r} holds {len(archives)} archive{'s' if len(archives) > 1 else ''} "
        f"({archives[0]!r}{more}) beside {len(others)} other file{s} ({shown!r}{running}"
        f"{', ...' if len(others) > 1 else ''}): read as a folder of files, each "
        "archive would be stored as one sample's bytes; read the archives' samples with "
        f"{archive_patterns(location, archives)}, or move the other file{s} out (a folder whose "
        "files are all archives is read as their samples), or commit the folder with --as "
        f"files to store each file, {them} too, as one sample's bytes")


# Files about an archive beside it (shard-000.tar.md5, shard-000.md5): not a sample's column.
_SIDECARS = frozenset({"md5", "sha1", "sha256", "sha512", "crc", "sig", "asc", "idx", "index"})
# What a download that has not finished is called beside its archive.
_PARTIAL = (".part", ".partial", ".crdownload", ".download", ".tmp", ".aria2")


def archive_patterns(location: str, archives: Sequence[str]) -> str:
    """``--from`` options whose quoted patterns name every archive of a folder (one per depth
    and extension: ``--from 'd/*.tar' --from 'd/*/*.tar'``)."""
    base = location.rstrip("/")
    seen: dict[str, None] = {}
    for n in archives:
        ext = next(n[-len(e):] for e, _ in sorted(ARCHIVE_EXTENSIONS, key=lambda x: -len(x[0]))
                   if n.lower().endswith(e))
        pattern = f"{glob.escape(base)}/{'*/' * n.count('/')}*{ext}"  # (a folder run[1])
        seen[f"--from {shlex.quote(pattern)}"] = None
    return " ".join(seen)


def is_archive_name(name: str) -> bool:
    """Whether ``name`` ends with an archive's extension (.zip, .tar, .tar.gz, ...)."""
    lower = name.lower()
    return any(lower.endswith(ext) and len(name) > len(ext) for ext, _ in ARCHIVE_EXTENSIONS)


def _stem(name: str) -> str:
    """``name`` without one archive, compression or table extension."""
    lower = name.lower()
    for ext in (*(e for e, _ in ARCHIVE_EXTENSIONS), ".gz", ".zst", *TABLE_FORMATS):
        if lower.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name
