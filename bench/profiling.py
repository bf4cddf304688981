"""Profile one measured epoch with pyinstrument (a dev tool of the peers venv).

    bench/.venv-peers/bin/python bench/profiling.py --workload image --rows 5000 \
        --system dload_arrow --mode sequential --unit sample --cache warm

Run bench/run.py for the same workload first (it ingests the data and, for cold, the S3
server is started here). Writes the text report to bench/results/profile-<...>.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import measure  # noqa: E402
from bench.results_io import DATA, RESULTS, _schema  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="image")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--system", default="dload_arrow")
    ap.add_argument("--mode", default="sequential")
    ap.add_argument("--unit", default="sample")
    ap.add_argument("--cache", default="warm")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--interval", type=float, default=0.0005)
    a = ap.parse_args()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1")
    from pyinstrument import Profiler

    from bench.adapters.wds import kind

    base = DATA / f"{a.workload}-{a.rows}"
    local_sys = "dload_arrow" if a.system in ("pyarrow", "dload_arrow-views") else a.system
    scratch = DATA / "scratch-profile"
    shutil.rmtree(scratch, ignore_errors=True)
    ctx: dict[str, Any] = {"local": str(base / local_sys), "cache_dir": str(scratch / "cache"),
           "extra": {"kinds": {k: kind(t) for k, t in _schema(base).items()},
                     "dataset": "data"}}
    s3 = None
    if a.system == "pyarrow":
        from bench.adapters.parquet import shard_files

        ctx["extra"]["shards"] = shard_files(str(base / "dload_arrow"), "data")
    if a.cache == "cold":
        from bench import s3srv
        from bench.adapters import ADAPTERS

        s3 = s3srv.start(DATA)
        s3.upload_dir(base / local_sys, "bench", f"{base.name}/{local_sys}",
                      public=ADAPTERS[local_sys].public_objects)
        ctx.update(endpoint=s3.endpoint, s3_url=f"s3://bench/{base.name}/{local_sys}")
    job = {"system": a.system, "n": a.rows, "ctx": ctx,
           "spec": {"mode": a.mode, "unit": a.unit, "cache": a.cache, "workers": a.workers}}
    prof = Profiler(interval=a.interval)
    try:
        prof.start()
        res = measure.measure(job)
        prof.stop()
    finally:
        if s3:
            s3.stop()
    name = f"profile-{a.system}-{a.workload}-{a.mode}-{a.cache}-{a.unit}-w{a.workers}.txt"
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = prof.output_text(unicode=False, color=False, show_all=False)
    (RESULTS / name).write_text(json.dumps(res) + "\n\n" + text)
    print(json.dumps(res))
    print(text[:6000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
