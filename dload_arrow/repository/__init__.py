"""The facade: Repository, Dataset, commit, pin, gc."""

from dload_arrow.repository.dataset import Dataset
from dload_arrow.repository.diff import VersionDiff
from dload_arrow.repository.gc import GcReport
from dload_arrow.repository.repository import Repository, VersionInfo

__all__ = ["Dataset", "GcReport", "Repository", "VersionDiff", "VersionInfo"]
