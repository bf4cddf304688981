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


def _ingest_rss(x: dict[str, Any]) -> str:
    """Peak RSS of the ingesting process, what it held before the clock (the input and the
    harness's rows), and its largest worker process if it wrote in workers (LitData)."""
    text = f"{_num(x['rss_mb']['median'])} MB"
    before = (x.get("rss_before_mb") or {}).get("median")
    child = (x.get("child_rss_mb") or {}).get("median")
    if before:
        text += f" ({_num(before)} before the clock)"
    if child and child > 50:  # (a subprocess of the harness's own is smaller)
        text += f" + workers of up to {_num(child)} MB each"
    return text


BATCH_NOTE = (
    "† Not like-for-like: in batch cells dload_arrow and the limit row hand over Arrow record "
    "batches whose values stay in Arrow, the peers dicts of Python lists (every value a Python "
    "object). Turning dload_arrow's batches into such dicts (`to_pydict()`) cost it 1.3x "
    "(image) to 1.8x (tabular) in QA bench56's check; the per-sample cells compare the same "
    "work. dload_arrow and the limit row deliver the same batches: one row group each in order, "
    "and 1,024 rows or 4 MiB shuffled.")


RSS_NOTE = (
    "`ru_maxrss`, torch imported in every process (since 4 Dec 23:46 UTC; before, dload_arrow's "
    "and the limit row's w0 cells ran without it, ~185 MB less). It counts the file pages of "
    "memory-mapped shards: dload_arrow reads a local root's shards in place, so a warm epoch's "
    "figure holds page-cache pages the kernel drops at will (one epoch of the image workload: "
    "~235 MB of them, ~190 MB anonymous). In parentheses, where measured: the peak of the "
    "anonymous memory alone (RssAnon, sampled every 20 ms).")
