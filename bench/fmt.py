"""Shared pieces of the report and its target table: system names, number formatting, and
the lookup of one (cell, system) result in a results document.
"""

from __future__ import annotations

from typing import Any

SYSTEMS = ["dload_arrow", "dload_arrow-views", "pyarrow", "mosaicml-streaming", "litdata",
           "webdataset"]
PEERS = ["mosaicml-streaming", "litdata", "webdataset"]
SERVERS = {"moto": "moto", "seaweedfs": "SeaweedFS"}  # loopback S3 of the cold cells
SHORT = {"dload_arrow": "dload_arrow", "dload_arrow-views": "dload_arrow, views=True",
         "pyarrow": "pyarrow (limit)",
         "mosaicml-streaming": "MosaicML streaming", "litdata": "LitData",
         "webdataset": "WebDataset"}


def _num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        s = f"{v / 1e6:.2f}M"
    elif abs(v) >= 1e4:
        s = f"{v / 1e3:.1f}k"
    elif abs(v) >= 100:
        s = f"{v:,.0f}"
    elif abs(v) >= 1:
        s = f"{v:.2f}"
    else:
        s = f"{v:.3f}"
    return s + unit


def _bytes(v: float | None) -> str:
    if v is None:
        return "-"
    for u, d in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if v >= d:
            return f"{v / d:.2f} {u}"
    return f"{v:.0f} B"


def _spread(s: dict[str, Any] | None) -> str:
    if not s or not s.get("median"):
        return ""
    if s["n"] < 2:
        return " (n=1)"
    return f" ±{(s['max'] - s['min']) / 2 / s['median'] * 100:.0f}%"


def _res(doc: dict[str, Any], cell: dict[str, Any], system: str) -> dict[str, Any] | None:
    for r in doc["results"]:
        if r["cell"] == cell and r["system"] == system:
            return r
    return None


def _status(r: dict[str, Any] | None) -> str | None:
    if r is None:
        return "not run"
    first = r["runs"][0] if r["runs"] else {}
    if "unsupported" in first:
        return "n/a"
    if "error" in first:
        return "failed"
    return None


def _median(r: dict[str, Any] | None, key: str) -> float | None:
    if r is None or _status(r) or not r.get(key):
        return None
    return r[key]["median"]


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"
