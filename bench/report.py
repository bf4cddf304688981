"""Render bench/results/*.json into BENCHMARKS.md (tables, ratios, machine, commands).

Prose that is not generated (method notes, speed work) lives in bench/notes/*.md and is
included verbatim, so re-rendering never loses it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("BENCH_RESULTS", ROOT / "bench" / "results"))
NOTES = ROOT / "bench" / "notes"
OUT = Path(os.environ.get("BENCH_OUT", ROOT / "BENCHMARKS.md"))
ORDER = ["image", "tabular", "tokens", "mix", "big"]
SYSTEMS = ["dload_arrow", "pyarrow", "mosaicml-streaming", "litdata", "webdataset"]
PEERS = ["mosaicml-streaming", "litdata", "webdataset"]
SERVERS = {"moto": "moto", "seaweedfs": "SeaweedFS"}  # loopback S3 of the cold cells
SHORT = {"dload_arrow": "dload_arrow", "pyarrow": "pyarrow (limit)",
         "mosaicml-streaming": "MosaicML streaming", "litdata": "LitData",
         "webdataset": "WebDataset"}

__all__ = ["render"]


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
    return f"{c['mode']} · {c['cache']} · w{c['workers']} · {c['unit']}"


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


def _rate_cell(r: dict[str, Any] | None) -> str:
    st = _status(r)
    if st:
        return st
    assert r is not None
    return _num(r["rate"]["median"]) + _spread(r["rate"]) if r.get("rate") else "-"


def _median(r: dict[str, Any] | None, key: str) -> float | None:
    if r is None or _status(r) or not r.get(key):
        return None
    return r[key]["median"]


def _cells(doc: dict[str, Any]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for r in doc["results"]:
        if r["cell"] not in seen:
            seen.append(r["cell"])
    return seen


def _systems(doc: dict[str, Any]) -> list[str]:
    present = {r["system"] for r in doc["results"]}
    return [s for s in SYSTEMS if s in present]


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


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
        lines.append(f"| {_cell_name(cell)} | " + " | ".join(row)
                     + f" | {_ratio(d, lim)} | {_ratio(d, best)} |")
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
            vals.append(st if st else fmt(_median(r, key)))
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
            f"{_num(x['rss_mb']['median'])} MB | "
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
    return out


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
            *_epoch_table(doc), ""]
    out += ["### Time to first item (s)", "",
            *_metric_table(doc, "first_batch_s", lambda v: _num(v)), ""]
    out += ["### Peak RSS of the consumer process (MB; workers reported separately in JSON)",
            "", *_metric_table(doc, "rss_mb", lambda v: _num(v)), ""]
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
    lines += _note("speed-work.md")
    out.write_text("\n".join(lines).rstrip() + "\n")


def _find(docs: list[dict[str, Any]], workload: str, cell: dict[str, Any], system: str,
          server: str = "moto") -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The largest run of ``workload`` (cold cells on ``server``) with a figure for the cell."""
    for doc in docs:
        if doc["workload"] != workload or doc.get("s3", "moto") != server:
            continue
        r = _res(doc, cell, system)
        if r is not None and not _status(r):
            return doc, r
    return None, None


def _c(mode: str, cache: str, workers: int, unit: str) -> dict[str, Any]:
    return {"mode": mode, "cache": cache, "workers": workers, "unit": unit}


def _targets(docs: list[dict[str, Any]]) -> list[str]:
    """Where each target of the issue stands, as ratios measured in one run."""
    rows: list[tuple[str, str, str, str]] = []

    def rate(workload: str, cell: dict[str, Any], system: str, doc: dict[str, Any] | None
             ) -> float | None:
        if doc is None:
            return None
        return _median(_res(doc, cell, system), "rate")

    def ratio_row(name: str, cell: dict[str, Any], other: str, goal: float,
                  workload: str = "image") -> None:
        doc, _ = _find(docs, workload, cell, "dload_arrow")
        d = rate(workload, cell, "dload_arrow", doc)
        o = rate(workload, cell, other, doc)
        if d and o:
            met = "yes" if d / o >= goal else "no"
            rows.append((name, f"{_num(d)} vs {_num(o)} /s", f"{d / o:.2f}x (goal {goal}x)",
                         met + _size(doc)))
        else:
            rows.append((name, "-", f"goal {goal}x", "not measured"))

    sws = _c("sequential", "warm", 0, "sample")
    ratio_row("per-sample warm vs MosaicML", sws, "mosaicml-streaming", 3.0)
    ratio_row("per-sample warm vs LitData", sws, "litdata", 1.0)
    ratio_row("per-sample warm vs pyarrow to_pylist", sws, "pyarrow", 0.8)
    # the same goal on the other full-size workloads (the issue states it for any data)
    ratio_row("per-sample warm vs LitData, tabular", sws, "litdata", 1.0, "tabular")
    ratio_row("per-sample warm vs LitData, tokens", sws, "litdata", 1.0, "tokens")
    ratio_row("batch warm vs pyarrow iter_batches", _c("sequential", "warm", 0, "batch"),
              "pyarrow", 0.8)
    for server, label in SERVERS.items():
        on = "" if server == "moto" else f", {label}"
        for unit in ("sample", "batch"):
            cell = _c("sequential", "cold", 0, unit)
            doc, _ = _find(docs, "image", cell, "dload_arrow", server)
            d = rate("image", cell, "dload_arrow", doc)
            peers = {p: rate("image", cell, p, doc) for p in PEERS}
            best = max(((v, p) for p, v in peers.items() if v), default=None)
            if d and best:
                rows.append((f"cold ({unit}) vs best peer{on}", f"{_num(d)} vs "
                             f"{_num(best[0])} /s ({SHORT[best[1]]})",
                             f"{d / best[0]:.2f}x (goal 1.5x)",
                             ("yes" if d / best[0] >= 1.5 else "no") + _size(doc)))
        doc, r = _find(docs, "image", _c("sequential", "cold", 0, "sample"), "dload_arrow",
                       server)
        t = _median(r, "first_batch_s")
        if t is not None:
            rows.append((f"cold time to first item{on}", f"{t:.2f} s", "goal < 1 s",
                         ("yes" if t < 1 else "no") + _size(doc)))
    for unit, on in (("sample", ""), ("batch", ", batches")):  # the goal holds for both units
        doc, r = _find(docs, "image", _c("windowed", "warm", 0, unit), "dload_arrow")
        seq = _c("sequential", "warm", 0, unit)
        s = _median(_res(doc, seq, "dload_arrow"), "rate") if doc else None
        w = _median(r, "rate")
        if s and w:
            rows.append((f"windowed shuffle vs sequential{on}", f"{_num(w)} vs {_num(s)} /s",
                         f"{w / s:.2f}x (goal 0.7x)",
                         ("yes" if w / s >= 0.7 else "no") + _size(doc)))
    doc, r = _find(docs, "image", _c("full", "warm", 0, "sample"), "dload_arrow")
    if r is not None:
        pkg = (r["runs"][0].get("quality") or {}).get("package") or {}
        zs = {k: v["z"] for k, v in pkg.items()}
        if zs:
            ok = all(abs(z) <= 4 for z in zs.values())
            rows.append(("full shuffle at the uniform references",
                         ", ".join(f"{k} z={z:+.1f}" for k, z in zs.items()), "|z| <= 4",
                         ("yes" if ok else "no") + _size(doc)))
    doc, r2 = _find(docs, "image", _c("sequential", "warm", 2, "map"), "dload_arrow")
    r0 = _res(doc, _c("sequential", "warm", 0, "map"), "dload_arrow") if doc else None
    a, b = _median(r0, "rate"), _median(r2, "rate")
    if a and b:
        rows.append(("num_workers=2 vs 0, CPU-bound map", f"{_num(b)} vs {_num(a)} /s",
                     f"{b / a:.2f}x (goal >= 1x)", ("yes" if b >= a else "no") + _size(doc)))
    for doc in docs:
        ing = doc.get("ingest") or {}
        d = (ing.get("dload_arrow") or {}).get("rate")
        m = (ing.get("mosaicml-streaming") or {}).get("rate")
        if doc["workload"] == "image" and d and m:
            rows.append(("ingest vs MDSWriter", f"{_num(d['median'])} vs {_num(m['median'])} /s",
                         f"{d['median'] / m['median']:.2f}x (goal 2x)",
                         ("yes" if d["median"] / m["median"] >= 2 else "no") + _size(doc)))
            break
    doc, r = _find(docs, "image", _c("sequential", "cold", 0, "batch"), "dload_arrow")
    if r is not None and doc is not None:
        shards = ((doc.get("ingest") or {}).get("dload_arrow") or {}).get("runs", [{}])[-1] \
            .get("info", {}).get("shards")
        g = _median(r, "gets")
        ranged = _median(r, "gets_ranged")
        if ranged is None:  # results written before the summary kept it: from the runs
            vals = sorted(x["gets_ranged"] for x in r.get("runs", []) if "gets_ranged" in x)
            ranged = vals[len(vals) // 2] if vals else None
        if g is not None:
            whole = g - (ranged or 0) - 2  # ref and manifest are whole-object GETs too
            rows.append(("GETs per shard per epoch",
                         f"{whole:.0f} whole-shard GETs for {shards} shards, "
                         f"{ranged or 0:.0f} ranged (first shard's footer) "
                         "+2 metadata (ref, manifest)", "goal 1 per shard",
                         ("yes" if shards and whole <= shards else "no")
                         + (" (+ the footer GET)" if ranged else "") + _size(doc)))
    big, rb = _find(docs, "big", _c("sequential", "cold", 0, "sample"), "dload_arrow")
    if rb is not None and big is not None:
        rss, peak = _median(rb, "rss_mb"), _median(rb, "cache_peak_bytes")
        budget = big.get("cache_budget")
        ok = peak is not None and budget is not None and peak <= budget
        rows.append(("(e) data 10x the cache budget", f"peak RSS {_num(rss)} MB, cache peak "
                     f"{_bytes(peak)} of a {_bytes(budget)} budget",
                     f"{_median(rb, 'gets'):.0f} GETs", ("yes" if ok else "no") + _size(big)))
    if not rows:
        return []
    out = ["## Targets (dload_arrow; ratios within one run)", "",
           "| target | measured | ratio | met |", "|---|---|---|---|"]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return [*out, ""]


def _size(doc: dict[str, Any] | None) -> str:
    if doc is None:
        return ""
    return f" ({doc['rows']:,} rows{', quick' if doc.get('quick') else ''})"
