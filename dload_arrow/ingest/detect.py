"""What a ``--from`` location is (directory, archive, table) and the source that reads it.

Archives are recognised by extension (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``,
``.tar.zst``/``.tzst``) and otherwise by their first bytes; tables by extension (``.parquet``,
``.csv``, ``.jsonl``). A directory whose data files are all tables is a table folder: beside
them it may hold markers (``_SUCCESS``, ``_committed_*``, hidden files, ``*.crc``), README or
LICENSE files and files without an extension, which are not read. Any other directory is a
folder of files grouped into samples.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dload_arrow.errors import ConfigError, IntegrityError, NotFoundError
from dload_arrow.ingest.directory import DirectorySource
from dload_arrow.ingest.location import is_remote, open_binary
from dload_arrow.ingest.source import SampleSource
from dload_arrow.ingest.tables import is_marker, table_format, table_listing
from dload_arrow.ingest.tarsource import TarSource
from dload_arrow.ingest.zipsource import ZipSource

__all__ = ["KINDS", "archive_format", "detect_kind", "is_table_folder", "open_archive",
           "open_source"]

KINDS = ("auto", "files", "archive", "table")
_EXTENSIONS = (
    (".zip", "zip"), (".tar", "tar"), (".tar.gz", "tar.gz"), (".tgz", "tar.gz"),
    (".tar.zst", "tar.zst"), (".tar.zstd", "tar.zst"), (".tzst", "tar.zst"),
)


def archive_format(location: str, *, endpoint_url: str | None = None, sniff: bool = True) -> str:
    """``"zip"``, ``"tar"``, ``"tar.gz"`` or ``"tar.zst"``; IntegrityError if none."""
    lower = location.lower().rstrip("/")
    for ext, fmt in _EXTENSIONS:
        if lower.endswith(ext):
            return fmt
    if sniff:
        f, _ = open_binary(location, endpoint_url=endpoint_url, block_size=4096)
        with f:
            head = f.read(512)
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            return "zip"
        if head.startswith(b"\x1f\x8b"):
            return "tar.gz"
        if head.startswith(b"\x28\xb5\x2f\xfd"):
            return "tar.zst"
        if head[257:262] == b"ustar":
            return "tar"
    raise IntegrityError(
        f"{location!r} is not a zip, tar, tar.gz or tar.zst archive (by extension or by its "
        "first bytes)"
    )


def is_table_folder(path: str) -> bool:
    """Whether a local folder holds tables and, beside them, only markers and documents."""
    tables, others = table_listing(path)
    return bool(tables) and all(
        o.endswith("/") or is_marker(o) or "." not in os.path.basename(o) for o in others
    )


def detect_kind(location: str, *, endpoint_url: str | None = None) -> str:
    """``"files"`` (a directory), ``"archive"`` or ``"table"`` for a ``--from`` location."""
    if not is_remote(location):
        path = location[len("file://") :] if location.startswith("file://") else location
        if os.path.isdir(path):
            return "table" if is_table_folder(path) else "files"
        if not os.path.exists(path):
            raise NotFoundError(f"no file or directory {location!r}; check the path")
    if table_format(location):
        return "table"
    archive_format(location, endpoint_url=endpoint_url)
    return "archive"


def open_archive(
    location: str,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    split: str = "last",
    endpoint_url: str | None = None,
) -> SampleSource:
    """The :class:`SampleSource` of a zip or tar archive, local or remote."""
    local = location[len("file://") :] if location.startswith("file://") else location
    if not is_remote(location) and os.path.isdir(local):
        raise ConfigError(
            f"{location!r} is a directory, not an archive: read it with --as files, or drop "
            "--as to detect it (in Python: open_source(path) for its files, "
            "open_table(path) for a folder of tables)"
        )
    fmt = archive_format(location, endpoint_url=endpoint_url)
    if fmt == "zip":
        return ZipSource(
            location, include=include, exclude=exclude, split=split, endpoint_url=endpoint_url
        )
    compression = {"tar": None, "tar.gz": "gz", "tar.zst": "zst"}[fmt]
    return TarSource(
        location, compression=compression, include=include, exclude=exclude, split=split,
        endpoint_url=endpoint_url,
    )


def open_source(
    location: str,
    *,
    kind: str = "auto",
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    split: str = "last",
    endpoint_url: str | None = None,
) -> SampleSource:
    """The sample source of a directory or an archive (tables: :func:`open_table`)."""
    if kind == "auto":
        kind = detect_kind(location, endpoint_url=endpoint_url)
    if kind == "files":
        return DirectorySource(location, include=include, exclude=exclude, split=split)
    if kind == "archive":
        return open_archive(
            location, include=include, exclude=exclude, split=split, endpoint_url=endpoint_url
        )
    raise ValueError(f"{location!r} is a {kind}, not a directory or an archive")

