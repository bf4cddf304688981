"""What a ``--from`` location is (directory, archive, table) and the source that reads it.

Archives are recognised by their first bytes, else by extension (``.zip``, ``.tar``,
``.tar.gz``/``.tgz``, ``.tar.zst``/``.tzst``; see :mod:`~dload_arrow.ingest.kinds`); tables by
extension (``.parquet``, ``.csv``, ``.jsonl``). A directory whose data files are all tables is
a table folder: beside them it may hold markers (``_SUCCESS``, ``_committed_*``, hidden files,
``*.crc``), README or LICENSE files and files without an extension, which are not read. Any
other directory is a folder of files grouped into samples.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from dload_arrow.args import check_path
from dload_arrow.errors import ConfigError, NotFoundError
from dload_arrow.ingest.archive_set import ArchiveSet, archive_folder
from dload_arrow.ingest.directory import DirectorySource
from dload_arrow.ingest.kinds import (
    archive_format,
    archive_named_table,
    is_marker,
    not_read_compressed,
    sniff_archive,
    table_format,
    table_kind,
    wrong_as,
)
from dload_arrow.ingest.location import is_remote, local_path, own_dirs
from dload_arrow.ingest.source import SampleSource
from dload_arrow.ingest.tables import table_listing
from dload_arrow.ingest.tarsource import TarSource
from dload_arrow.ingest.zipsource import ZipSource

__all__ = ["KINDS", "archive_format", "detect_kind", "is_table_folder", "open_archive",
           "open_archives", "open_source"]

KINDS = ("auto", "files", "archive", "table")


def is_table_folder(path: str, include: Sequence[str] = (), exclude: Sequence[str] = (),
                    store_dirs: Sequence[str | os.PathLike[str]] = ()) -> bool:
    """Whether a local folder holds tables and, beside them, only markers and documents (of
    the files the globs keep; ``store_dirs``, dload's own folders, are not looked into). A
    ``.parquet.gz`` beside tables is refused, naming it: read as a folder of files, its
    tables would be stored as file blobs and their rows lost."""
    tables, others = table_listing(path, include, exclude, skip=own_dirs(store_dirs))
    for other in others if tables else ():
        error = not_read_compressed(other, path)
        if error is not None:
            raise error
    return bool(tables) and all(
        o.endswith("/") or is_marker(o) or "." not in os.path.basename(o) for o in others
    )


def detect_kind(location: str | os.PathLike[str], *, endpoint_url: str | None = None,
                include: Sequence[str] = (), exclude: Sequence[str] = (),
                store_dirs: Sequence[str | os.PathLike[str]] = ()) -> str:
    """``"files"`` (a directory), ``"archive"`` or ``"table"`` for a ``--from`` location;
    ``include``/``exclude``: the globs that choose a folder's files; ``store_dirs``: dload's
    own folders (a local root's, the cache), which a folder may hold and are not its data."""
    location = os.fspath(location)
    if not is_remote(location):
        path = local_path(location)
        if os.path.isdir(path):
            skip = own_dirs(store_dirs)
            table = is_table_folder(path, include, exclude, store_dirs) or bool(
                (include or exclude) and not table_listing(path, include, exclude, skip=skip)[0]
                and is_table_folder(path, store_dirs=store_dirs))  # the table error says so
            return "table" if table else "files"
        if not os.path.exists(path):
            raise NotFoundError(f"no file or directory {location!r}; check the path")
    if table_format(location):  # an archive by its content, whatever its name says
        return "archive" if archive_named_table(location, endpoint_url=endpoint_url) else "table"
    archive_format(location, endpoint_url=endpoint_url)
    return "archive"


def open_archive(
    location: str | os.PathLike[str],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    split: str = "last",
    endpoint_url: str | None = None,
) -> SampleSource:
    """The :class:`SampleSource` of a zip or tar archive, local or remote."""
    location = os.fspath(location)
    local = local_path(location)
    if not is_remote(location) and os.path.isdir(local):
        if is_table_folder(local):
            raise wrong_as(location, "a directory of tables", "an archive", "table")
        raise wrong_as(location, "a directory", "an archive", "files")
    fmt = sniff_archive(location, endpoint_url=endpoint_url)
    if fmt is None and (table := table_kind(location)) is not None:
        raise wrong_as(location, table, "an archive", "table")
    fmt = fmt or archive_format(location, endpoint_url=endpoint_url, sniff=False)
    if fmt == "zip":
        return ZipSource(
            location, include=include, exclude=exclude, split=split, endpoint_url=endpoint_url
        )
    compression = {"tar": None, "tar.gz": "gz", "tar.zst": "zst"}[fmt]
    return TarSource(
        location, compression=compression, include=include, exclude=exclude, split=split,
        endpoint_url=endpoint_url,
    )


def open_archives(
    locations: Sequence[str | os.PathLike[str]],
    *,
    include: Sequence[str] | str = (),
    exclude: Sequence[str] | str = (),
    split: str = "last",
    endpoint_url: str | None = None,
    where: str | None = None,
) -> ArchiveSet:
    """The samples of several archives (WebDataset shards) as one source, archive after
    archive in the order given: ``repo.commit(name, open_archives(paths).reader())``.

    Each is read as :func:`open_source` reads one archive; the columns are every archive's
    (null where one has none); a key in two archives, or a column of two types, is refused.
    ``where`` names the set in messages (default: the first archive and how many more).
    """
    if isinstance(locations, str | os.PathLike):
        raise TypeError("open_archives takes a list of paths or URLs; for one archive use "
                        "open_source()")
    paths = [check_path("open_archives", "locations", p) for p in locations]
    real = [p if is_remote(p) else os.path.realpath(local_path(p)) for p in paths]
    if twice := sorted({p for p, r in zip(paths, real, strict=True) if real.count(r) > 1}):
        said = (f"{twice[0]!r} is given twice" if len(twice) == 1 else
                f"one archive is given under {len(twice)} names ({', '.join(map(repr, twice))})")
        raise ConfigError(f"{said} among the archives; give each once")
    if where is None:
        where = (f"{paths[0]!r} and {len(paths) - 1} more archive(s)" if len(paths) > 1
                 else repr(paths[0]) if paths else "open_archives([])")
    return ArchiveSet([open_archive(p, include=include, exclude=exclude, split=split,
                                    endpoint_url=endpoint_url) for p in paths], where)


def open_source(
    location: str | os.PathLike[str],
    *,
    kind: str = "auto",
    include: Sequence[str] | str = (),
    exclude: Sequence[str] | str = (),
    split: str = "last",
    endpoint_url: str | None = None,
    store_dirs: Sequence[str | os.PathLike[str]] = (),
) -> SampleSource | ArchiveSet:
    """The sample source of a directory or an archive (tables: :func:`open_table`); a
    folder whose files are all archives (WebDataset shards) is read as their samples
    (:func:`open_archives`, in name order) under ``kind="auto"``.

    Args:
        location: a local path (str, pathlib.Path or bytes), a ``file://`` URL or a remote URL
            (``s3://bucket/data.tar.zst``).
        kind: ``"auto"`` (detect from the path and its first bytes), ``"files"`` (a
            directory) or ``"archive"`` (zip, tar, tar.gz, tar.zst).
        include: globs of files to read (one pattern as a str, or a list), matched against
            the path inside ``location``, the file name and the folders on the path.
        exclude: globs of files to leave out (wins over ``include``).
        split: where a file name's extension starts, which makes the column: ``"last"``
            dot (``x.seg.png`` -> key ``x.seg``, column ``png``) or ``"first"`` (key ``x``,
            column ``seg.png``: the webdataset convention).
        endpoint_url: the S3 endpoint for a remote location.
        store_dirs: folders a directory's walk leaves out (a local storage root, a cache;
            one as a str or path, or a list).

    Raises:
        TypeError: a location that is no str, path or bytes.
        ConfigError: an unknown ``kind`` or ``split``, or a location that is neither.
    """
    location = check_path("open_source", "location", location)
    if kind not in ("auto", "files", "archive"):
        raise ConfigError(f"open_source(kind={kind!r}): kind is 'auto' (detect), 'files' (a "
                          "directory) or 'archive' (zip, tar, tar.gz, tar.zst); tables are "
                          "read with open_table()")
    auto = kind == "auto"
    if auto:
        kind = detect_kind(location, endpoint_url=endpoint_url, include=include, exclude=exclude,
                           store_dirs=store_dirs)
    if auto and kind == "files" and (archives := archive_folder(local_path(location))):
        # a folder of WebDataset shards: their samples, not each archive's bytes (QA migrate59)
        return open_archives(archives, include=include, exclude=exclude, split=split,
                             where=location)
    if kind == "files":
        folder = DirectorySource(location, include=include, exclude=exclude, split=split,
                                 store_dirs=store_dirs)
        folder.tables_refused = auto  # archives or tables in it would be stored as bytes
        return folder
    if kind == "archive":
        source = open_archive(
            location, include=include, exclude=exclude, split=split, endpoint_url=endpoint_url
        )
        source.tables_refused = auto  # its tables would be stored as bytes (kinds.py)
        return source
    raise ConfigError(f"{location!r} is a {kind}, not a directory or an archive")
