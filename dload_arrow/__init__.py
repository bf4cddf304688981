"""dload_arrow: a dataset store and streaming loader for ML training on Arrow and Parquet."""

from __future__ import annotations

from dload_arrow.errors import (
    ConfigError,
    ConflictError,
    DloadError,
    InfeasiblePlanError,
    IntegrityError,
    InvalidNameError,
    NotFoundError,
    SchemaError,
    StorageError,
    UnsafePathError,
)
from dload_arrow.repository import Dataset, GcReport, Repository, VersionInfo
from dload_arrow.store.commit import Version

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "ConflictError",
    "Dataset",
    "DloadError",
    "GcReport",
    "InfeasiblePlanError",
    "IntegrityError",
    "InvalidNameError",
    "NotFoundError",
    "Repository",
    "SchemaError",
    "StorageError",
    "UnsafePathError",
    "Version",
    "VersionInfo",
    "__version__",
]
