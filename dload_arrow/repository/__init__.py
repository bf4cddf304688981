"""The facade: Repository, Dataset, commit, pin, gc."""

from dload_arrow.args import name_as
from dload_arrow.read.pull import CacheStatus, PullReport
from dload_arrow.repository.dataset import Dataset
from dload_arrow.repository.diff import VersionDiff
from dload_arrow.repository.gc import GcReport
from dload_arrow.repository.repository import Repository, VersionInfo
from dload_arrow.repository.shortcuts import PipelineShortcuts
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.ref_log import LogEntry
from dload_arrow.store.version import Version

name_as(Dataset, PipelineShortcuts)  # errors and pickles name Dataset.batch, not the mixin

# (CacheStatus, PullReport, LogEntry, Manifest, Version: what Repository's methods return)
__all__ = ["CacheStatus", "Dataset", "GcReport", "LogEntry", "Manifest", "PullReport",
           "Repository", "Version", "VersionDiff", "VersionInfo"]
