"""dload_arrow: a dataset store and streaming loader for ML training on Arrow and Parquet."""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from dload_arrow.allocator import cap_malloc_arenas, choose_fork_safe_pool

choose_fork_safe_pool()  # before anything loads pyarrow: DataLoader workers are forked
cap_malloc_arenas()  # under `ulimit -v` only

from dload_arrow.errors import (  # noqa: E402
    ConfigError,
    ConflictError,
    DloadError,
    EmptyInputError,
    InfeasiblePlanError,
    IntegrityError,
    InvalidNameError,
    KeysStoredError,
    MissingKeyError,
    NotFoundError,
    PredicateError,
    SchemaError,
    SqlError,
    StorageError,
    UnsafePathError,
)

if TYPE_CHECKING:
    from dload_arrow.catalog.frames import to_pandas
    from dload_arrow.ingest.archive import from_archive
    from dload_arrow.pipeline import (
        Pipeline,
        choice,
        concat,
        from_iterable,
        mix,
        pad_collate,
        random_stream,
        select,
        zip_with,
    )
    from dload_arrow.repository import Dataset, GcReport, Repository, VersionDiff, VersionInfo
    from dload_arrow.store.commit import Version

    # the subpackages, served on first access (``dl.torch.as_iterable_dataset``), to mypy too
    from . import catalog, config, ingest, pipeline, read, repository, stats, torch  # noqa: F401

# Loaded on first use (PEP 562): pyarrow, numpy and the rest take 0.5 s to import, which a
# ``dload --help`` or an ``import dload_arrow`` for the error classes need not pay.
_LAZY = {
    "from_archive": "dload_arrow.ingest.archive",
    "to_pandas": "dload_arrow.catalog.frames",
    **dict.fromkeys(("Pipeline", "choice", "concat", "from_iterable", "mix", "pad_collate",
                     "random_stream", "select", "zip_with"), "dload_arrow.pipeline"),
    **dict.fromkeys(("Dataset", "GcReport", "Repository", "VersionDiff", "VersionInfo"),
                    "dload_arrow.repository"),
    "Version": "dload_arrow.store.commit",
}


if not TYPE_CHECKING:  # to a type checker the names are the imports above: a typo is found

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
                return importlib.import_module(f"{__name__}.{name}")  # a subpackage, as before
            raise AttributeError(f"module 'dload_arrow' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


_SUBPACKAGES = ("catalog", "config", "errors", "ingest", "pipeline", "read", "repository",
                "stats", "torch")


def __dir__() -> list[str]:  # tab completion: the API, not typing or import helpers
    return sorted({*__all__, *_SUBPACKAGES, *(n for n in globals() if n.startswith("__"))})


__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "ConflictError",
    "Dataset",
    "DloadError",
    "EmptyInputError",
    "GcReport",
    "InfeasiblePlanError",
    "IntegrityError",
    "InvalidNameError",
    "KeysStoredError",
    "MissingKeyError",
    "NotFoundError",
    "Pipeline",
    "PredicateError",
    "Repository",
    "SchemaError",
    "SqlError",
    "StorageError",
    "UnsafePathError",
    "Version",
    "VersionDiff",
    "VersionInfo",
    "__version__",
    "choice",
    "concat",
    "from_archive",
    "from_iterable",
    "mix",
    "pad_collate",
    "random_stream",
    "select",
    "to_pandas",
    "zip_with",
]
