"""The refusal of an archive whose samples would each be one whole file's bytes by mistake:
an archive of tables (their rows are read from a file or a folder) or of archives (ImageNet's
train tar of 1,000 class tars), read with ``--as auto``."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from dload_arrow.errors import ConfigError
from dload_arrow.ingest.kinds import ARCHIVE_EXTENSIONS, TABLE_FORMATS, is_marker, table_format
from dload_arrow.ingest.location import is_remote

__all__ = ["archive_of_tables", "is_archive_name"]


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
    if not extract:  # a folder (QA migrate59: "extract it (``)", then a wrong --as)
        what = "archives" if inner else "tables"
        return ConfigError(
            f"{location!r} is a folder of {what} in subfolders ({found[0]!r}{more}): each would "
            "be stored as one sample's bytes; commit each folder on its own (a folder whose "
            "files are all archives is read as their samples, and so is a table folder), or "
            f"name them with a quoted pattern (--from '{location.rstrip('/')}/*/*"
            f"{'.tar' if inner else '.parquet'}'), or commit it with --as files to store each "
            "file as one sample's bytes")
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
