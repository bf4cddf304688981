"""Available memory (meminfo, cgroups, DLOAD_MEMORY_LIMIT) and the full shuffle's check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dload_arrow import ConfigError, InfeasiblePlanError, Pipeline, Repository
from dload_arrow.read.memory import available_memory

GB = 10**9


def fake_proc(tmp_path: Path, available_kb: int | None) -> str:
    proc = tmp_path / "proc"
    proc.mkdir()
    lines = ["MemTotal:       24684092 kB", "MemFree:         8554780 kB"]
    if available_kb is not None:
        lines.append(f"MemAvailable:   {available_kb} kB")
    (proc / "meminfo").write_text("\n".join(lines) + "\n")
    return str(proc)


def fake_cgroup(tmp_path: Path, files: dict[str, str]) -> str:
    cg = tmp_path / "cgroup"
    for name, text in files.items():
        (cg / name).parent.mkdir(parents=True, exist_ok=True)
        (cg / name).write_text(text + "\n")
    cg.mkdir(exist_ok=True)
    return str(cg)


def test_available_memory_is_the_smaller_of_meminfo_and_the_cgroup_v2_room(
        tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 8_000_000)  # 8.19 GB
    cg = fake_cgroup(tmp_path, {"memory.max": str(4 * GB), "memory.current": str(GB)})
    assert available_memory(proc, cg) == 3 * GB
    roomy = fake_cgroup(tmp_path / "b", {"memory.max": str(64 * GB), "memory.current": "0"})
    assert available_memory(proc, roomy) == 8_000_000 * 1024


def test_an_unlimited_cgroup_leaves_meminfo(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 1_000_000)
    v2 = fake_cgroup(tmp_path / "v2", {"memory.max": "max", "memory.current": str(GB)})
    v1 = fake_cgroup(tmp_path / "v1", {"memory/memory.limit_in_bytes": str(2**63 - 4096),
                                        "memory/memory.usage_in_bytes": str(GB)})
    assert available_memory(proc, v2) == available_memory(proc, v1) == 1_000_000 * 1024


def test_a_cgroup_v1_limit_counts(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 50_000_000)
    v1 = fake_cgroup(tmp_path, {"memory/memory.limit_in_bytes": str(2 * GB),
                                "memory/memory.usage_in_bytes": str(3 * GB)})
    assert available_memory(proc, v1) == 0  # over its limit already: no room at all


def test_nothing_readable_means_no_check(tmp_path: Path) -> None:
    assert available_memory(str(tmp_path / "none"), str(tmp_path / "none")) is None
    assert available_memory(fake_proc(tmp_path, None), str(tmp_path / "none")) is None


def test_this_machine_reports_some_memory() -> None:
    got = available_memory()
    assert got is not None and 0 < got <= 1 << 50


def test_the_environment_overrides_detection(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    proc = fake_proc(tmp_path, 1_000)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "64GB")
    assert available_memory(proc) == 64 * GB  # above what meminfo says: the user knows better
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "unlimited")
    assert available_memory(proc) is None
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "lots")
    with pytest.raises(ConfigError, match="DLOAD_MEMORY_LIMIT 'lots' is not a size"):
        available_memory(proc)


@pytest.fixture
def images(repo: Repository) -> Repository:
    rows = [(f"k{i:04d}", {"img": bytes([i % 251]) * 4000, "label": i}) for i in range(300)]
    repo.commit("images", rows, shard_size=200_000, progress=False)
    return repo


@pytest.mark.parametrize("items", [True, False], ids=["items", "batches"])
def test_a_full_shuffle_that_cannot_fit_in_memory_stops_with_the_fixes(
        images: Repository, monkeypatch: pytest.MonkeyPatch, items: bool) -> None:
    pipe = images.dataset("images").shuffle(full=True, seed=3)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1MB")  # the 300 rows decode to 1.2 MB
    with pytest.raises(InfeasiblePlanError) as e:
        next(iter(pipe) if items else pipe.iter_chunks())
    msg = str(e.value)
    assert "full shuffle of images" in msg and "300 decoded rows" in msg
    assert "1.0 MB are available" in msg and "this process needs" in msg
    assert "windowed shuffle" in msg and "DLOAD_MEMORY_LIMIT" in msg
    # the same epoch fits once there is room, and a windowed shuffle never needs it all
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "10MB")
    assert sorted(r["label"] for r in pipe) == list(range(300))
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1MB")
    windowed = images.dataset("images").shuffle(50, seed=3)
    assert sorted(r["label"] for r in windowed) == list(range(300))


def test_a_sharded_full_shuffle_holds_only_its_own_rows(
        images: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    def part() -> Pipeline:
        return images.dataset("images").shuffle(full=True, seed=3).shard(1, 3)

    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1KB")
    with pytest.raises(InfeasiblePlanError, match="holds 100 decoded rows"):
        next(iter(part()))
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "unlimited")
    whole = [r["label"] for r in images.dataset("images").shuffle(full=True, seed=3)]
    assert [r["label"] for r in part()] == whole[1::3]


def test_the_check_counts_every_consumer_of_the_machine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.read.memory import check_full_shuffle_memory, set_local_consumers

    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1MB")
    check_full_shuffle_memory("d", 1000.0, 400)  # 400 KB: fits
    try:
        set_local_consumers(3)
        with pytest.raises(InfeasiblePlanError, match="the 3 consumers on this machine need"):
            check_full_shuffle_memory("d", 1000.0, 400)  # 1.2 MB together
    finally:
        set_local_consumers(1)


def test_dataloader_workers_check_what_they_hold_together(
        images: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from dload_arrow.torch import as_iterable_dataset

    def loader() -> Any:
        pipe = images.dataset("images").shuffle(full=True, seed=3)
        return torch.utils.data.DataLoader(as_iterable_dataset(pipe, to_tensors=False),
                                           batch_size=None, num_workers=2)

    # Each worker keeps 150 rows (~0.66 MB): one fits in 1 MB, the two together do not.
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1MB")
    with pytest.raises(InfeasiblePlanError, match="the 2 consumers on this machine need"):
        list(loader())
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "2MB")
    assert sorted(r["label"] for r in loader()) == list(range(300))


def test_the_cgroup_of_this_process_and_those_above_it_count(tmp_path: Path) -> None:
    # A slurm step (no limit of its own) inside a job limited to 4 GB, cgroup v2 unshared: the
    # mount root has no memory.max, /proc/self/cgroup says where the process lives.
    proc = Path(fake_proc(tmp_path, 50_000_000))
    (proc / "self").mkdir()
    (proc / "self" / "cgroup").write_text("0::/system.slice/job_7/step_0\n")
    cg = fake_cgroup(tmp_path, {
        "system.slice/job_7/memory.max": str(4 * GB),
        "system.slice/job_7/memory.current": str(GB),
        "system.slice/job_7/step_0/memory.max": "max",
        "system.slice/job_7/step_0/memory.current": str(GB // 2),
    })
    assert available_memory(str(proc), cg) == 3 * GB
    # cgroup v1: the memory controller's own hierarchy
    (proc / "self" / "cgroup").write_text("5:cpu:/\n4:memory:/batch/task_1\n0::/\n")
    v1 = fake_cgroup(tmp_path / "v1", {
        "memory/batch/task_1/memory.limit_in_bytes": str(2 * GB),
        "memory/batch/task_1/memory.usage_in_bytes": str(GB // 2),
        "memory/memory.limit_in_bytes": str(2**63 - 4096),
    })
    assert available_memory(str(proc), v1) == 2 * GB - GB // 2
