"""Ingestion: directories, archives (zip, tar, tar.gz, tar.zst) and tables into samples.

``open_source`` groups the files of a directory or an archive into samples (key = path without
extension, one column per extension); ``open_table`` reads Parquet, CSV and JSON Lines;
``from_archive`` is a pipeline source over an archive's samples.
"""

from __future__ import annotations

from dload_arrow.ingest.archive_set import ArchiveSet
from dload_arrow.ingest.detect import (
    archive_format,
    detect_kind,
    open_archive,
    open_archives,
    open_source,
)
from dload_arrow.ingest.directory import DirectorySource
from dload_arrow.ingest.globs import Globs, GlobWarning
from dload_arrow.ingest.grouping import Entry, IngestReport, check_entry_name, split_name
from dload_arrow.ingest.source import SampleSource, UnsortedWarning
from dload_arrow.ingest.tables import open_table
from dload_arrow.ingest.tarsource import TarSource
from dload_arrow.ingest.zipsource import ZipSource

__all__ = [
    "ArchiveSet",
    "DirectorySource",
    "Entry",
    "GlobWarning",
    "Globs",
    "IngestReport",
    "SampleSource",
    "TarSource",
    "UnsortedWarning",
    "ZipSource",
    "archive_format",
    "check_entry_name",
    "detect_kind",
    "open_archive",
    "open_archives",
    "open_source",
    "open_table",
    "split_name",
]
