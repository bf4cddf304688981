"""What a ``--from`` file is, by its first bytes and its name, and the error of an ``--as``
that does not fit it.

Archives are recognised by content first (a zip's local header, a gzip or zstd stream, a
ustar header), then by extension (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``,
``.tar.zst``/``.tzst``): a gzip tar named ``x.zip`` is read as the tar.gz it is. A zip with
data before its first entry (self-extracting) or an old tar without the ustar magic is known
by its extension. Tables are recognised by extension (``.parquet``, ``.csv``, ``.jsonl``).
"""

from __future__ import annotations

import os
import posixpath
import shlex

from dload_arrow.errors import ConfigError, DloadError, NotFoundError, SchemaError
from dload_arrow.ingest.location import is_remote, open_binary
from dload_arrow.ingest.table_stream import compression, without_compression

__all__ = ["ARCHIVE_EXTENSIONS", "TABLE_FORMATS", "archive_format", "archive_named_table",
           "compressed_table", "file_kind", "is_marker", "mixed_formats",
           "no_tables", "not_read_compressed", "sniff_archive", "table_format", "table_kind",
           "wrong_as"]

TABLE_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",  # tab-separated: read with tabs (table_stream.csv_parse)
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".arrow": "arrow",
    ".feather": "arrow",
}
ARCHIVE_EXTENSIONS = (
    (".zip", "zip"), (".tar", "tar"), (".tar.gz", "tar.gz"), (".tgz", "tar.gz"),
    (".tar.zst", "tar.zst"), (".tar.zstd", "tar.zst"), (".tzst", "tar.zst"),
)
# Compressed streams recognised only to say that they are not supported.
_UNSUPPORTED = (
    (tuple(b"BZh%d" % level for level in range(1, 10)), "bzip2", "bzip2"),
    ((b"\xfd7zXZ\x00",), "xz", "xz"),
)
_TABLE_NAMES = {"parquet": "Parquet", "csv": "CSV", "jsonl": "JSON Lines", "arrow": "Arrow IPC"}
_PYTHON = {
    "files": "open_source(path)",
    "archive": "open_source(path) or dl.from_archive(path)",
    "table": "open_table(path)",
}


def table_format(path: str, json_lines: bool = False) -> str | None:
    """``"parquet"``, ``"csv"``, ``"jsonl"`` by extension, else None; ``json_lines``: a
    ``.json`` file is JSON Lines too (in Spark's output folder, beside ``_SUCCESS``)."""
    lower = path.lower()
    inner = without_compression(lower)
    if inner != lower:  # x.csv.gz: read through a decompressor; Parquet cannot be
        fmt = table_format(inner, json_lines)
        return fmt if fmt in ("csv", "jsonl") else None
    if json_lines and lower.endswith(".json"):
        return "jsonl"
    return next((f for ext, f in TABLE_FORMATS.items() if lower.endswith(ext)), None)


def table_kind(path: str) -> str | None:
    """What a table file is by its extension (``"a CSV table"``), else None."""
    fmt = table_format(path)
    return None if fmt is None else f"a {_TABLE_NAMES[fmt]} table"


def sniff_archive(location: str, *, endpoint_url: str | None = None) -> str | None:
    """The archive format that the first bytes of ``location`` show, or None.

    Reads 512 bytes (one ranged GET for a remote object); a missing file raises NotFoundError.
    """
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
    for magic, codec, tool in _UNSUPPORTED:
        if head.startswith(magic):
            name = location.rsplit("/", 1)[-1]
            stem = name[: name.rfind(".")] if "." in name else name
            if table_format(stem) in ("csv", "jsonl"):  # y.csv.bz2: a table, read as .zst
                raise ConfigError(
                    f"{location!r} is {codec}-compressed, which is not read (CSV and JSON "
                    f"Lines are read compressed with gzip or zstd); recompress it, e.g. "
                    f"`{tool} -dc {name} | zstd -o {stem}.zst`, and commit that")
            raise ConfigError(
                f"{location!r} is {codec}-compressed, which is not supported (only zip, tar, "
                f"tar.gz and tar.zst are read in place); recompress it as .tar.zst or .tar.gz, "
                f"e.g. `{tool} -dc {name} | zstd -o data.tar.zst`"
            )
    return None


def compressed_table(location: str) -> tuple[str, str] | None:
    """``(what it is, its file name)`` of a compressed table file that is not read compressed
    (``x.parquet.gz``), else None."""
    name = location.rstrip("/").rsplit("/", 1)[-1]
    compressed = compression(name) is not None and table_format(name) is None
    kind = table_kind(without_compression(name)) if compressed else None
    return None if kind is None else (kind, name)


def not_read_compressed(location: str, where: str = "") -> ConfigError | None:
    """The error of a compressed table that is not read compressed (``x.parquet.gz``), or
    None; ``where``: the folder it was found in."""
    inner = compressed_table(location)
    if inner is None:
        return None
    codec = compression(location)
    seen = f"{where!r} holds tables and {location!r}," if where else f"{location!r} is"
    return ConfigError(
        f"{seen} {inner[0]} compressed with {codec}, which is not read compressed "
        f"(Parquet compresses inside the file): decompress it (`{codec} -dk "
        f"{shlex.quote(inner[1])}`) and commit {inner[1][:inner[1].rfind('.')]!r}" + (
            f" with the others, or leave it out (--exclude {shlex.quote(inner[1])})" if where
            else ""))


class NotAnArchiveError(ConfigError):
    """A file that is neither a table dload reads nor an archive (:func:`archive_format`)."""


def archive_format(location: str | os.PathLike[str], *, endpoint_url: str | None = None,
                   sniff: bool = True) -> str:
    """``"zip"``, ``"tar"``, ``"tar.gz"`` or ``"tar.zst"``, by content (when ``sniff``) and
    then by extension; ConfigError if neither says."""
    location = os.fspath(location)
    if sniff and (fmt := sniff_archive(location, endpoint_url=endpoint_url)) is not None:
        return fmt
    lower = location.lower().rstrip("/")
    for ext, fmt in ARCHIVE_EXTENSIONS:
        if lower.endswith(ext):
            return fmt
    name = lower.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    # another kind of file (an extension, and not an archive's; or none: `chr1`, no corrupt
    # archive, QA genomics65)
    hint = (" If it holds one JSON object per line, rename it to .jsonl and it is read as "
            "a table." if ext == "json" else "")
    by = f"by its .{ext} extension and its first bytes" if ext else \
        "it has no extension, and its first bytes are no archive's"
    raise NotAnArchiveError(
        f"{location!r} is neither a table dload reads (.parquet, .pq, .csv, .tsv, .jsonl, "
        f".ndjson, .arrow, .feather; .csv.gz and .csv.zst too) nor a zip, tar, tar.gz or "
        f"tar.zst archive ({by}); convert it to one of those, or commit the folder that holds "
        f"it (each file a sample; --as files takes a folder, not a file).{hint}")


def file_kind(location: str, *, endpoint_url: str | None = None) -> tuple[str, str] | None:
    """``(what the file is, the --as that reads it)``, e.g. ``("a CSV table", "table")`` or
    ``("a tar.gz archive", "archive")``; None for a file that is neither."""
    table = table_kind(location)
    if table is not None:
        return table, "table"
    try:
        archive = archive_format(location, endpoint_url=endpoint_url)
    except NotAnArchiveError:  # (neither: each --as says what it takes, QA genomics65)
        return None
    return f"a {archive} archive", "archive"


def archive_named_table(location: str, *, endpoint_url: str | None = None
                        ) -> ConfigError | None:
    """The error for a zip or tar archive saved under a table's name (``photos.csv``), found
    by its first bytes; None for anything else. (A gzip or zstd stream is a compressed table
    as often as a compressed tar: only the zip and tar magic tell.)"""
    fmt = sniff_archive(location, endpoint_url=endpoint_url)
    if fmt not in ("zip", "tar"):
        return None
    return wrong_as(location, f"a {fmt} archive (by its first bytes)", table_kind(location)
                    or "a table", "archive", " whatever its name says")


_DOC_STEMS = ("readme", "license", "licence", "notice", "changelog", "authors")
# What HuggingFace datasets.save_to_disk writes beside its .arrow files (QA migrate59)
_SIDECARS = frozenset({"dataset_info.json", "state.json", "dataset_dict.json"})


def is_marker(name: str) -> bool:
    """Whether a file beside tables is a marker or a document, not data: hidden and `_`
    files (`_SUCCESS`), `*.crc`, README, LICENSE, NOTICE, CHANGELOG and AUTHORS files, and
    HuggingFace's `dataset_info.json`, `state.json`, `dataset_dict.json`."""
    base = posixpath.basename(name)
    lower = base.lower()
    return (base.startswith((".", "_")) or lower.endswith(".crc")
            or lower.split(".", 1)[0] in _DOC_STEMS or lower in _SIDECARS)


def wrong_as(location: str, what: str, asked: str, fits: str, detail: str = "") -> ConfigError:
    """The error of ``--as`` on a path it does not fit: what the path is, which ``--as`` fits.

    Args:
        location: the ``--from`` path.
        what: what the path is (``"a zip archive"``).
        asked: what ``--as`` took it for (``"a table"``).
        fits: the ``--as`` kind that reads it: ``"files"``, ``"archive"`` or ``"table"``.
        detail: said after ``asked`` (``" (it is a zip archive)"``).
    """
    return ConfigError(
        f"{location!r} is {what}, not {asked}{detail}: read it with --as {fits}, or drop --as "
        f"to detect it (in Python: {_PYTHON[fits]})"
    )


def mixed_formats(path: str, files: list[str]) -> SchemaError:
    """The error of a folder holding more than one table format, with the ways out."""
    exts = sorted({next((e for e in TABLE_FORMATS if f.lower().endswith(e)), ".json")
                   for f in files})
    counts = ", ".join(f"{sum(f.lower().endswith(e) for f in files)} {e}" for e in exts)
    first, *rest = exts
    where = shlex.quote(path)
    return SchemaError(
        f"{path!r} mixes table formats ({counts} files), and one commit reads one format (CSV, "
        "JSON Lines and Parquet type their columns differently): convert the files to one "
        "format, or commit one format and append the others: "
        f"`dload commit NAME --from {where} --include '*{first}'`, then "
        + ", ".join(f"`dload append NAME --from {where} --include '*{e}'`" for e in rest)
        + " (with the same --key-column, if any)"
    )


def no_tables(path: str, unused: str, every: list[str], endpoint_url: str | None,
              own_only: bool = False) -> DloadError:
    """Why ``path`` gave no table file: the globs (``every``: the table files there without
    them, ``unused``: the globs that matched nothing), a folder holding only folders not read
    (``own_only``: dload's own data, hidden ones), or what the path is and the --as that fits."""
    if every:
        example = os.path.relpath(every[0], path) if os.path.isdir(path) else every[0]
        return NotFoundError(
            f"no Parquet, CSV, JSON Lines or Arrow files at {path!r} after --include/--exclude: "
            f"they leave out all {len(every)} table files there (e.g. {example!r});{unused} check "
            "the globs"
        )
    exts = ", ".join(TABLE_FORMATS)
    if not is_remote(path) and not os.path.exists(path):
        return NotFoundError(f"no file or directory {path!r}; check the path")
    if own_only:
        return ConfigError(
            f"{path!r} holds only folders that are not read (dload's own data: a storage "
            "root's datasets/ and shards/, or hidden ones): nothing to commit; point --from "
            "at the folder of your files")
    if not is_remote(path) and os.path.isdir(path):
        return wrong_as(path, f"a folder of files with no table among them ({exts})",
                        "a folder of tables", "files")
    compressed = not_read_compressed(path)
    if compressed is not None:
        return compressed
    kind = file_kind(path, endpoint_url=endpoint_url)
    if kind is not None:
        inside = (" (tables inside an archive are not read as tables: extract it and commit the "
                  "folder)") if kind[1] == "archive" else ""
        return wrong_as(path, kind[0], "a table", kind[1], inside)
    return NotFoundError(
        f"{path!r} is neither a table nor an archive: tables are recognised by extension "
        f"({exts}), archives by extension or content; if it holds a table, rename it with "
        "its format's extension"
    )
