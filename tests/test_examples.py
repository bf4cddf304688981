"""Every script in examples/ runs to completion on a fresh temporary root and cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert any(p.name == "quickstart.py" for p in EXAMPLES)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["DLOAD_ROOT"] = str(tmp_path / "root")
    env["DLOAD_CACHE_DIR"] = str(tmp_path / "cache")
    env.setdefault("DLOAD_CACHE_BUDGET", "1GB")
    env["PYTHONUNBUFFERED"] = "1"
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, (
        f"{script.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )


@pytest.mark.integration
def test_the_torch_example_on_seaweedfs_prints_no_worker_tracebacks(
        seaweed_root: str, tmp_path: Path) -> None:
    # A forked DataLoader worker dropped the s3fs client it inherited, and s3fs's clean-up
    # then closed the parent's session on the worker's loop: "Task exception was never
    # retrieved ... attached to a different loop", twice a run on SeaweedFS (QA "seaweed").
    pytest.importorskip("torch")
    script = next(p for p in EXAMPLES if p.name == "torch_training.py")
    env = {**os.environ, "DLOAD_ROOT": seaweed_root, "DLOAD_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "never retrieved" not in done.stderr and "Traceback" not in done.stderr, (
        done.stderr[-3000:])
