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
    PredicateError,
    SchemaError,
    SqlError,
    StorageError,
    UnsafePathError,
)
from dload_arrow.ingest.archive import from_archive
from dload_arrow.pipeline import (
    Pipeline,
    choice,
    concat,
    from_iterable,
    mix,
    random_stream,
    select,
    zip_with,
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
    "Pipeline",
    "PredicateError",
    "Repository",
    "SchemaError",
    "SqlError",
    "StorageError",
    "UnsafePathError",
    "Version",
    "VersionInfo",
    "__version__",
    "choice",
    "concat",
    "from_archive",
    "from_iterable",
    "mix",
    "random_stream",
    "select",
    "zip_with",
]
