"""Run the benchmark: dload_arrow beside its peers on one workload, on this machine.

    bench/.venv-peers/bin/python bench/run.py --workload image --quick
    bench/.venv-peers/bin/python bench/run.py --workload image --systems dload_arrow,pyarrow
    bench/.venv-peers/bin/python bench/run.py --render        # BENCHMARKS.md from results

Every figure is one epoch measured in a fresh process, repeated ``--repeats`` times (default
3); the JSON under bench/results/ keeps every repeat, the tables show the median and spread.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import workloads as W  # noqa: E402
from bench.adapters import ADAPTERS, SYSTEMS  # noqa: E402
from bench.cells import CORE, _cell, _match, cells  # noqa: E402
from bench.results_io import DATA, RESULTS, _key, _merge, _schema, machine  # noqa: E402
from bench.runner import child, summarize  # noqa: E402

WORKLOADS = ["image", "tabular", "tokens", "mix", "big"]
READS_DLOAD = ("pyarrow", "dload_arrow-views")  # read dload_arrow's shards; no ingest


def _marks(bases: list[Path], where: Path, log: Any) -> Path:
    """The cache dir marks of dload_arrow's local shards, made once per run by ``dload
    verify`` (untimed) and copied into the emptied cache dir before each warm run: a warm
    epoch is a later epoch on the machine, which skips the page checks of a shard's first
    read (bench/README.md, "warm")."""
    from dload_arrow import Repository
    from dload_arrow.cli.main import main

    shutil.rmtree(where, ignore_errors=True)
    for b in bases:
        root = str(b / "dload_arrow")
        for name in Repository.open(root, cache_dir=where).datasets():
            log(f"dload verify {name} ({root}): marks its shards as read whole")
            if main(["verify", name, "--root", root, "--cache-dir", str(where)]) != 0:
                raise SystemExit(f"dload verify {name} failed on {root}")
    return where / "verified"


def prepare(w: W.Workload, n: int, log: Any, shard_mb: int | None = None) -> tuple[Path, int]:
    """The workload's rows as an Arrow IPC file (generated once, cached under bench/data)."""
    import pyarrow as pa

    base = DATA / f"{w.name}-{n}" / (f"shards-{shard_mb}mb" if shard_mb else "")
    base.mkdir(parents=True, exist_ok=True)
    src = base / "source.arrow"
    plain = DATA / f"{w.name}-{n}" / "source.arrow"
    if not src.exists() and shard_mb and plain.exists():
        os.link(plain, src)
    if not src.exists():
        log(f"generating {w.name} x {n}")
        tmp = src.with_suffix(".tmp")
        gen = W.generate(w, n)
        first = next(gen)
        with pa.OSFile(str(tmp), "wb") as f, pa.ipc.new_file(f, first.schema) as wr:
            wr.write_batch(first)
            for b in gen:
                wr.write_batch(b)
        tmp.rename(src)
    with pa.memory_map(str(src)) as m:
        raw = pa.ipc.open_file(m).read_all().nbytes
    return base, raw


def ingest_all(w: W.Workload, n: int, systems: list[str], repeats: int, log: Any,
               fresh: bool, shard_mb: int | None = None) -> dict[str, Any]:
    base, raw = prepare(w, n, log, shard_mb)
    out: dict[str, Any] = {}
    for system in systems:
        if system in READS_DLOAD:
            continue
        final = base / system
        if final.exists() and not fresh and (base / f"{system}.ok").exists():
            prev = json.loads((base / f"{system}.ok").read_text())
            out[system] = prev
            continue
        runs = []
        for r in range(repeats):
            dest = base / f"{system}.run{r}"
            shutil.rmtree(dest, ignore_errors=True)
            shutil.rmtree(base / f"{system}.run{r}.pristine", ignore_errors=True)
            shutil.rmtree(base / f"{system}.run{r}.cache", ignore_errors=True)
            res = child({"kind": "ingest", "system": system, "source": str(src_of(base)),
                         "shard_bytes": shard_mb * 2**20 if shard_mb else None,
                         "out": str(dest), "raw_bytes": raw})
            log(f"  ingest {system} #{r}: {_fmt(res, 'rate')}")
            runs.append(res)
        last = base / f"{system}.run{repeats - 1}"
        shutil.rmtree(final, ignore_errors=True)
        shutil.rmtree(base / f"{system}.pristine", ignore_errors=True)
        if last.exists():
            last.rename(final)
            if (base / f"{system}.run{repeats - 1}.pristine").exists():
                (base / f"{system}.run{repeats - 1}.pristine").rename(
                    base / f"{system}.pristine")
        for r in range(repeats - 1):
            shutil.rmtree(base / f"{system}.run{r}", ignore_errors=True)
            shutil.rmtree(base / f"{system}.run{r}.pristine", ignore_errors=True)
        for p in base.glob("*.cache"):
            shutil.rmtree(p, ignore_errors=True)
        summary = {"runs": runs, "raw_bytes": raw,
                   **{k: summarize(runs, k) for k in ("rate", "mb_s", "bytes_on_disk",
                                                      "rss_mb", "child_rss_mb",
                                                      "rss_before_mb")}}
        out[system] = summary
        if all("error" not in r for r in runs):
            (base / f"{system}.ok").write_text(json.dumps(summary))
    return out


def src_of(base: Path) -> Path:
    return base / "source.arrow"


def _fmt(res: dict[str, Any], key: str) -> str:
    if "error" in res:
        return "ERROR " + res["error"]
    if "unsupported" in res:
        return "n/a (" + res["unsupported"] + ")"
    v = res.get(key)
    return f"{v:,.0f}/s" if isinstance(v, float) else str(v)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", choices=WORKLOADS)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test, minutes)")
    ap.add_argument("--rows", type=int, help="override the workload's row count")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cells", default="", help="filter cells, e.g. mode=sequential,cache=warm")
    ap.add_argument("--core", action="store_true",
                    help="only the core cells (full-size runs on a small machine)")
    ap.add_argument("--rest", action="store_true", help="only the cells --core leaves out")
    ap.add_argument("--no-cold", action="store_true", help="skip cells that need the S3 server")
    ap.add_argument("--s3", choices=("moto", "seaweedfs"), default="moto",
                    help="the loopback S3 server of the cold cells")
    ap.add_argument("--fresh", action="store_true", help="re-ingest even if outputs exist")
    ap.add_argument("--tag", default="", help="suffix of the results file")
    ap.add_argument("--merge", default="", help="replace these cells in an existing results "
                    "file (e.g. image.json) instead of writing a new one")
    ap.add_argument("--render", action="store_true", help="write BENCHMARKS.md and exit")
    args = ap.parse_args(argv)
    if args.render:
        from bench.report import render

        render()
        return 0
    if not args.workload:
        ap.error("--workload is required (or --render)")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]

    def log(msg: str) -> None:
        print(time.strftime("%H:%M:%S"), msg, flush=True)

    wl_name = {"mix": "image", "big": "image"}.get(args.workload, args.workload)
    w = W.get(wl_name)
    n = args.rows or w.n(args.quick)
    want = [c for c in cells(args.workload) if _match(c, args.cells)]
    if args.core:
        want = [c for c in want if c in CORE]
    if args.rest:
        want = [c for c in want if c not in CORE]
    if args.no_cold:
        want = [c for c in want if c["cache"] == "warm"]
    ingest_systems = [s for s in systems if s not in READS_DLOAD]
    if set(READS_DLOAD) & set(systems) and "dload_arrow" not in ingest_systems:
        ingest_systems.insert(0, "dload_arrow")  # the limit row reads dload_arrow's shards
    log(f"workload {args.workload} ({w.name} x {n}); systems {systems}; {len(want)} cells")
    # (e): 2 MB shards, so that a tenth of the data still holds several of them (MDS needs
    # cache_limit >= 4x its largest shard, raw + zip)
    shard_mb = 2 if args.workload == "big" else None
    ingest = ingest_all(w, n, ingest_systems, args.repeats if args.workload == w.name else 1,
                        log, args.fresh, shard_mb)
    base, raw = prepare(w, n, log, shard_mb)
    extra_b: dict[str, Any] = {}
    n_b = 0
    if args.workload == "mix":
        wb = W.get("mix_b")
        n_b = max(1, n // 2)
        ingest_all(wb, n_b, ingest_systems, 1, log, args.fresh)
        extra_b["base"] = DATA / f"{wb.name}-{n_b}"
    from bench.adapters.wds import kind

    kinds = {k: kind(t) for k, t in _schema(base).items()}
    s3 = None
    if any(c["cache"] == "cold" for c in want):
        from bench import s3srv

        s3 = s3srv.start(DATA, args.s3)
        log(f"S3 server ({s3.name}) at {s3.endpoint}; uploading")
        for system in ingest_systems:
            s3.upload_dir(base / system, "bench", f"{_key(base)}/{system}",
                          public=ADAPTERS[system].public_objects)
            if extra_b:
                s3.upload_dir(extra_b["base"] / system, "bench",
                              f"{extra_b['base'].name}/{system}",
                              public=ADAPTERS[system].public_objects)
    shards = None
    if "pyarrow" in systems:
        from bench.adapters.parquet import shard_files

        shards = shard_files(str(base / "dload_arrow"), "data")
    budget = None
    if args.workload == "big":
        budget = max(1, ingest["dload_arrow"]["bytes_on_disk"]["median"] // 10) \
            if "dload_arrow" in ingest else raw // 10
    results: list[dict[str, Any]] = []
    scratch = DATA / "scratch"
    # Repeats are interleaved (every cell's first repeat, then every cell's second...), so
    # that a machine whose speed drifts over minutes biases no cell against another.
    pairs = [(cell, system) for cell in want for system in systems]
    runs: list[list[dict[str, Any]]] = [[] for _ in pairs]
    try:
        marks = None  # (inside the try: the S3 server stops whatever happens here)
        if "dload_arrow" in ingest_systems and any(c["cache"] == "warm" for c in want):
            marks = _marks([base] + ([extra_b["base"]] if extra_b else []),
                           DATA / "scratch-marks", log)
        for r in range(args.repeats):
            for i, (cell, system) in enumerate(pairs):
                if runs[i] and ("unsupported" in runs[i][-1] or "error" in runs[i][-1]):
                    continue
                shutil.rmtree(scratch, ignore_errors=True)
                local_sys = "dload_arrow" if system in READS_DLOAD else system
                if marks is not None and local_sys == "dload_arrow" and cell["cache"] == "warm":
                    shutil.copytree(marks, scratch / "cache" / "verified")  # a later epoch
                ctx: dict[str, Any] = {
                    "local": str(base / local_sys), "cache_dir": str(scratch / "cache"),
                    "extra": {"kinds": kinds,
                              "dataset": "data", "shards": shards},
                }
                if s3 is not None:
                    ctx.update(endpoint=s3.endpoint, counts_url=s3.counts_url,
                               s3_url=f"s3://bench/{_key(base)}/{local_sys}")
                if extra_b:
                    ctx["local_b"] = str(extra_b["base"] / local_sys)
                    if s3 is not None:
                        ctx["s3_url_b"] = f"s3://bench/{extra_b['base'].name}/{local_sys}"
                spec = dict(cell, seed=17 + r, cache_budget=budget)
                if args.workload == "mix":
                    spec.update(mix=[0.7, 0.3], limit=n)
                job = {"system": system, "spec": spec, "ctx": ctx, "n": n,
                       "n_a": W.MIX_B_BASE, "quality": args.workload == "mix"}
                res = child(job)
                runs[i].append(res)
                log(f"{args.workload} {_cell(cell)} {system} #{r}: {_fmt(res, 'rate')}")
        for (cell, system), got in zip(pairs, runs, strict=True):
            results.append({"cell": cell, "system": system, "runs": got,
                            **{k: summarize(got, k) for k in (
                                "rate", "first_batch_s", "rss_mb", "rss_anon_mb", "worker_rss_mb",
                                "gets", "gets_ranged", "get_bytes", "cache_peak_bytes",
                                "steal")}})
    finally:
        if s3 is not None:
            s3.stop()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(DATA / "scratch-marks", ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.merge:
        return _merge(RESULTS / args.merge, results, argv, log, args.s3,
                      {k: v for k, v in ingest.items() if k in ingest_systems}
                      if args.fresh else None)
    name = f"{args.workload}{'-quick' if args.quick else ''}{args.tag}.json"
    cmd = "bench/.venv-peers/bin/python bench/run.py " + shlex.join(argv or sys.argv[1:])
    doc = {"workload": args.workload, "data": w.name, "rows": n, "rows_b": n_b,
           "raw_bytes": raw, "quick": args.quick, "command": cmd, "s3": args.s3,
           "cache_budget": budget,
           "repeats": args.repeats, "machine": machine(), "ingest": ingest, "results": results,
           "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (RESULTS / name).write_text(json.dumps(doc, indent=1))
    log(f"wrote {RESULTS / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
