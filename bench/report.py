"""Render bench/results/*.json into BENCHMARKS.md (tables, ratios, machine, commands).

Prose that is not generated (method notes, speed work) lives in bench/notes/*.md and is
included verbatim, so re-rendering never loses it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench.fmt import (
    BATCH_NOTE,
    PEERS,
    RSS_NOTE,
    SERVERS,
    SHORT,
    SYSTEMS,
    _bytes,
    _ingest_rss,
    _median,
    _num,
    _ratio,
    _res,
    _spread,
    _status,
)
from bench.targets import _targets

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("BENCH_RESULTS", ROOT / "bench" / "results"))
NOTES = ROOT / "bench" / "notes"
OUT = Path(os.environ.get("BENCH_OUT", ROOT / "BENCHMARKS.md"))
ORDER = ["image", "tabular", "tokens", "mix", "big"]

__all__ = ["render"]


def _current_remeasures(doc: dict[str, Any]) -> list[tuple[dict[str, Any], list[Any]]]:
    """Each re-measure with the cells whose figures it still holds (a later one replaced the
    rest); re-measures whose cells were all replaced are left out."""
    later: set[str] = set()
    kept = []
    for m in reversed(doc.get("remeasured", [])):
        keys = [json.dumps(pair, sort_keys=True) for pair in m["cells"]]
        own = [pair for pair, k in zip(m["cells"], keys, strict=True) if k not in later]
        later.update(keys)
        if own:
            kept.append((m, own))
    return kept[::-1]


def _cell_name(c: dict[str, Any]) -> str:
    if c["mode"] == "ingest":  # an ingest figure re-measured with --fresh --merge
        return "ingest"
    return f"{c['mode']} · {c['cache']} · w{c['workers']} · {c['unit']}"


def _rate_cell(r: dict[str, Any] | None) -> str:
    st = _status(r)
    if st:
        return st
    assert r is not None
    failed = sum("error" in run for run in r["runs"])  # a later repeat (QA bench56)
    mark = f" ({failed} of {len(r['runs'])} runs failed)" if failed else ""
    return (_num(r["rate"]["median"]) + _spread(r["rate"]) if r.get("rate") else "-") + mark


def _cells(doc: dict[str, Any]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for r in doc["results"]:
        if r["cell"] not in seen:
            seen.append(r["cell"])
    return seen


def _systems(doc: dict[str, Any]) -> list[str]:
    present = {r["system"] for r in doc["results"]}
    return [s for s in SYSTEMS if s in present]


def _epoch_table(doc: dict[str, Any]) -> list[str]:
    systems = _systems(doc)
    head = "| cell (mode · data · workers · unit) | " + " | ".join(SHORT[s] for s in systems)
    head += " | dload / limit | dload / best peer |"
    lines = [head, "|" + "---|" * (len(systems) + 3)]
    for cell in _cells(doc):
        row = [_rate_cell(_res(doc, cell, s)) for s in systems]
        d = _median(_res(doc, cell, "dload_arrow"), "rate")
        lim = _median(_res(doc, cell, "pyarrow"), "rate")
        peers = [_median(_res(doc, cell, p), "rate") for p in PEERS]
        best = max((p for p in peers if p), default=None)
        peer = _ratio(d, best) + (" †" if cell["unit"] == "batch" and best else "")
        lines.append(f"| {_cell_name(cell)} | " + " | ".join(row)
                     + f" | {_ratio(d, lim)} | {peer} |")
    if any(c["unit"] == "batch" for c in _cells(doc)):
        lines += ["", BATCH_NOTE]
    return lines


def _metric_table(doc: dict[str, Any], key: str, fmt: Any, only_cold: bool = False
                  ) -> list[str]:
    systems = _systems(doc)
    lines = ["| cell | " + " | ".join(SHORT[s] for s in systems) + " |",
             "|" + "---|" * (len(systems) + 1)]
    for cell in _cells(doc):
        if only_cold and cell["cache"] != "cold":
            continue
        vals = []
        for s in systems:
            r = _res(doc, cell, s)
            st = _status(r)
            anon = _median(r, "rss_anon_mb") if key == "rss_mb" and not st else None
            vals.append(st if st else fmt(_median(r, key)) + (f" ({fmt(anon)})" if anon else ""))
        lines.append(f"| {_cell_name(cell)} | " + " | ".join(vals) + " |")
    return lines


def _quality_table(doc: dict[str, Any]) -> list[str]:
    lines = ["| cell | system | displacement (uniform 0.333) | same-block adjacency "
             "(uniform 0.016) | rank correlation (uniform 0) | mix score (uniform 1.0) |",
             "|---|---|---|---|---|---|"]
    for cell in _cells(doc):
        if cell["mode"] == "sequential" and doc["workload"] != "mix":
            continue
        for s in _systems(doc):
            r = _res(doc, cell, s)
            if _status(r) or r is None:
                continue
            q = r["runs"][0].get("quality") or {}
            if not q:
                continue
            lines.append(
                f"| {_cell_name(cell)} | {SHORT[s]} | {q['displacement']:.3f} | "
                f"{q['same_block_adjacency']:.3f} | {q['rank_correlation']:.3f} | "
                f"{q['mix_score']:.3f} |")
    return lines


def _ingest_table(doc: dict[str, Any]) -> list[str]:
    lines = ["| system | samples/s | MB/s (of Arrow bytes) | bytes on disk | peak RSS | "
             "vs dload_arrow |", "|---|---|---|---|---|---|"]
    ing = doc.get("ingest", {})
    d = (ing.get("dload_arrow") or {}).get("rate") or {}
    for s in SYSTEMS:
        x = ing.get(s)
        if not x or not x.get("rate"):
            if x:
                lines.append(f"| {SHORT[s]} | failed | | | | |")
            continue
        lines.append(
            f"| {SHORT[s]} | {_num(x['rate']['median'])}{_spread(x['rate'])} | "
            f"{_num(x['mb_s']['median'])} | {_bytes(x['bytes_on_disk']['median'])} | "
            f"{_ingest_rss(x)} | "
            f"{_ratio(d.get('median'), x['rate']['median'])} |")
    return lines


def _errors(doc: dict[str, Any]) -> list[str]:
    out = []
    for r in doc["results"]:
        first = r["runs"][0] if r["runs"] else {}
        if "unsupported" in first:
            out.append(f"- n/a: {SHORT[r['system']]}, {_cell_name(r['cell'])}: "
                       f"{first['unsupported']}")
        elif "error" in first:
            out.append(f"- failed: {SHORT[r['system']]}, {_cell_name(r['cell'])}: "
                       f"`{first['error'][:200]}`")
        elif (later := next((x for x in r["runs"] if "error" in x), None)) is not None:
            out.append(f"- a repeat failed (the figure is of the others): "
                       f"{SHORT[r['system']]}, {_cell_name(r['cell'])}: "
                       f"`{later['error'][:200]}`")
    return out


def _steal(doc: dict[str, Any]) -> list[str]:
    """How much CPU the host took during the runs that recorded it (bench/run.py)."""
    runs = [(r, x["steal"]) for r in doc["results"] for x in r["runs"] if "steal" in x]
    if not runs:
        return []
    shares = sorted(v for _, v in runs)
    worst = max(runs, key=lambda p: p[1])[0]
    return [f"CPU stolen by the hypervisor during the {len(runs)} runs that recorded it "
            f"(share of the busy CPU time): median {shares[len(shares) // 2]:.0%}, at most "
            f"{shares[-1]:.0%} ({SHORT[worst['system']]}, {_cell_name(worst['cell'])}). The "
            "other runs predate the record.", ""]


def _workload(doc: dict[str, Any]) -> list[str]:
    w = doc["workload"]
    size = "quick" if doc.get("quick") else f"{doc['rows']:,} rows"
    if doc.get("s3", "moto") != "moto":
        size += f", cold on {SERVERS[doc['s3']]}"
    out = [f"## Workload: {w} ({size})", ""]
    out.append(f"{doc['rows']:,} rows of `{doc['data']}` ({_bytes(doc['raw_bytes'])} as Arrow)"
               + (f", mixed 0.7/0.3 with {doc['rows_b']:,} rows of a second dataset"
                  if doc.get("rows_b") else "")
               + (f"; cache budget {_bytes(doc['cache_budget'])} (a tenth of the data)"
                  if doc.get("cache_budget") else "")
               + f". Measured {doc['when']}, {doc['repeats']} repeats.")
    out += ["", f"Reproduce: `{doc['command']}`", ""]
    for m, own in _current_remeasures(doc):
        cells = "; ".join(f"{SHORT[sy]} {_cell_name(c)}" for c, sy in own)
        out += [f"Re-measured {m['when']} ({cells}): `{m['command']}`", ""]
    if doc.get("ingest") and w not in ("mix", "big"):
        out += ["### Ingest", "", *_ingest_table(doc), ""]
    out += ["### Epoch throughput (samples/s, median ± half the min-max spread)", "",
            *_epoch_table(doc), "", *_steal(doc)]
    out += ["### Time to first item (s)", "",
            *_metric_table(doc, "first_batch_s", lambda v: _num(v)), ""]
    out += ["### Peak RSS of the consumer process (MB; workers reported separately in JSON)",
            "", RSS_NOTE, "", *_metric_table(doc, "rss_mb", lambda v: _num(v)), ""]
    if any(c["cache"] == "cold" for c in _cells(doc)):
        out += ["### GET requests per epoch (cold; bytes served in parentheses)", ""]
        systems = _systems(doc)
        lines = ["| cell | " + " | ".join(SHORT[s] for s in systems) + " |",
                 "|" + "---|" * (len(systems) + 1)]
        for cell in _cells(doc):
            if cell["cache"] != "cold":
                continue
            vals = []
            for s in systems:
                r = _res(doc, cell, s)
                st = _status(r)
                g, b = _median(r, "gets"), _median(r, "get_bytes")
                vals.append(st or (f"{g:.0f} ({_bytes(b)})" if g is not None else "-"))
            lines.append(f"| {_cell_name(cell)} | " + " | ".join(vals) + " |")
        out += [*lines, "", "GETs counted at the server; bytes are the sum of the GET responses' "
                "Content-Length, so a GET the client aborts after the headers counts whole "
                "(see Speed work, cold).", ""]
    if doc.get("cache_budget"):
        out += ["### Peak cache on disk (bytes)", "",
                *_metric_table(doc, "cache_peak_bytes", _bytes), ""]
    q = _quality_table(doc)
    if len(q) > 2:
        out += ["### Shuffle quality (first repeat)", "", *q, ""]
    if w == "mix":
        out += ["### Realised share of the first dataset (target 0.70)", ""]
        for r in doc["results"]:
            if not _status(r):
                shares = [x.get("mix_share_a") for x in r["runs"] if "mix_share_a" in x]
                if shares:
                    out.append(f"- {SHORT[r['system']]}, {_cell_name(r['cell'])}: "
                               f"{shares[0]:.3f}")
        out.append("")
    errs = _errors(doc)
    if errs:
        out += ["### Cells without a figure", "", *errs, ""]
    return out


def _note(name: str) -> list[str]:
    p = NOTES / name
    return [p.read_text().rstrip(), ""] if p.exists() else []


def render(out: Path = OUT) -> None:
    found = []
    for p in sorted(RESULTS.glob("*.json")):
        if "-dev" in p.stem:
            continue
        found.append(json.loads(p.read_text()))
    # per workload: full-size runs first, then quick ones
    found.sort(key=lambda d: (ORDER.index(d["workload"]) if d["workload"] in ORDER else 99,
                              bool(d.get("quick")), d.get("s3", "moto") != "moto", -d["rows"]))
    docs = {i: d for i, d in enumerate(found)}
    lines = ["# Benchmarks", "",
             "Generated by `bench/.venv-peers/bin/python bench/run.py --render` from "
             "`bench/results/*.json`; set-up and method: `bench/README.md`.", ""]
    lines += _note("intro.md")
    if docs:
        m = next(iter(docs.values()))["machine"]
        lines += ["## Machine", "",
                  f"- CPU: {m['cpu']}, {m['cores']} cores; RAM {m['ram_gb']} GB; "
                  f"disk {m['disk']}; kernel {m['kernel']}",
                  "- Versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
                  ""]
    lines += _note("targets.md")
    lines += _targets(found)
    for doc in found:
        lines += _workload(doc)
    lines += _note("gpu.md")
    lines += _note("speed-work.md")
    out.write_text("\n".join(lines).rstrip() + "\n")
