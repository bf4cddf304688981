"""One adapter per benchmarked system, behind the interface in ``base.py``."""

from __future__ import annotations

from typing import Any

__all__ = ["ADAPTERS", "SYSTEMS"]

SYSTEMS = ["dload_arrow", "dload_arrow-views", "pyarrow", "mosaicml-streaming", "litdata",
           "webdataset"]


class _Lazy(dict):  # type: ignore[type-arg]
    """Import an adapter (and its library) only when it is used."""

    def __missing__(self, name: str) -> Any:
        cls: Any
        if name == "dload_arrow":
            from bench.adapters.dload import DloadAdapter as cls
        elif name == "dload_arrow-views":
            from bench.adapters.dload import DloadViewsAdapter as cls
        elif name == "pyarrow":
            from bench.adapters.parquet import ParquetAdapter as cls
        elif name == "mosaicml-streaming":
            from bench.adapters.mds import MDSAdapter as cls
        elif name == "litdata":
            from bench.adapters.lit import LitDataAdapter as cls
        elif name == "webdataset":
            from bench.adapters.wds import WDSAdapter as cls
        else:
            raise KeyError(f"unknown system {name!r}: choose from {SYSTEMS}")
        self[name] = cls
        return cls


ADAPTERS: dict[str, Any] = _Lazy()
