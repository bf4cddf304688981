"""Where the harness keeps its files, and what it writes there beside the figures.

The data and results folders (``BENCH_DATA``, ``BENCH_RESULTS``), the machine a results file
was measured on, the merge of re-measured cells into an existing results file, and the S3 key
and source schema of an ingested data folder.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.adapters import ADAPTERS, SYSTEMS

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("BENCH_DATA", ROOT / "bench" / "data"))
RESULTS = Path(os.environ.get("BENCH_RESULTS", ROOT / "bench" / "results"))


def _sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except Exception:
        return ""


def machine() -> dict[str, Any]:
    cpu = _sh("lscpu | grep 'Model name' | sed 's/.*: *//'") or platform.processor()
    mem = _sh("free -g | awk '/Mem:/{print $2}'")
    disk = _sh(f"df -h {DATA} | tail -1 | awk '{{print $1\" \"$2}}'")
    versions = {}
    for s in SYSTEMS:
        try:
            versions[s] = ADAPTERS[s]().version()
        except Exception as e:
            versions[s] = f"unavailable ({type(e).__name__})"
    import numpy
    import pyarrow

    versions.update(python=platform.python_version(), numpy=numpy.__version__,
                    pyarrow=pyarrow.__version__)
    try:
        import torch

        versions["torch"] = torch.__version__
    except ImportError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gb": mem, "disk": disk,
            "kernel": platform.release(), "versions": versions}


INGEST_CELL = {"mode": "ingest", "cache": "-", "workers": 0, "unit": "-"}


def _merge(target: Path, results: list[dict[str, Any]], argv: list[str] | None,
           log: Any, server: str = "moto", ingest: dict[str, Any] | None = None) -> int:
    """Replace (cell, system) entries of ``target`` by new measurements; record the command.

    ``ingest``: fresh ingest figures (``--fresh``) replacing those systems' ingest entries."""
    doc = json.loads(target.read_text())
    if doc.get("s3", "moto") != server and any(r["cell"]["cache"] == "cold" for r in results):
        raise SystemExit(f"{target.name} holds cold figures on {doc.get('s3', 'moto')}, "
                         f"not {server}: write a new file (--tag) instead of --merge")
    for new in results:
        doc["results"] = [r for r in doc["results"]
                          if (r["cell"], r["system"]) != (new["cell"], new["system"])]
        doc["results"].append(new | {"remeasured": True})
    pairs = [[r["cell"], r["system"]] for r in results]
    for system, summary in (ingest or {}).items():
        doc.setdefault("ingest", {})[system] = summary
        pairs.append([INGEST_CELL, system])
    cmd = "bench/.venv-peers/bin/python bench/run.py " + shlex.join(argv or sys.argv[1:])
    doc.setdefault("remeasured", []).append(
        {"command": cmd, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         "cells": pairs})
    target.write_text(json.dumps(doc, indent=1))
    log(f"merged {len(pairs)} entries into {target}")
    return 0


def _key(base: Path) -> str:
    return base.relative_to(DATA).as_posix()


def _schema(base: Path) -> dict[str, Any]:
    import pyarrow as pa

    with pa.memory_map(str(base / "source.arrow")) as m:
        sch = pa.ipc.open_file(m).schema
    return {f.name: f.type for f in sch}
