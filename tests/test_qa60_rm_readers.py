"""QA infer60: `rm` then `gc` (default grace) deleted the shards of a version a training job
was reading mid-epoch: the grace period counted from the shards' writes, months before. rm now
touches the removed version's shards that latest does not list: they stay for the grace."""

from __future__ import annotations

import os
import time
from pathlib import Path

import dload_arrow as dl


def _age(root: Path, seconds: float) -> None:
    t = time.time() - seconds
    for f in (root / "shards").rglob("*.parquet"):
        os.utime(f, (t, t))


def _rows(lo: int, hi: int) -> list[tuple[str, dict[str, object]]]:
    return [(f"k{i:05d}", {"x": i, "blob": os.urandom(500)}) for i in range(lo, hi)]


def test_a_reader_of_a_removed_version_keeps_its_shards_for_the_grace(tmp_path: Path) -> None:
    root = tmp_path / "root"
    repo = dl.Repository.open(root, cache_dir=tmp_path / "c")
    v1 = repo.commit("d", _rows(0, 400), shard_size="64KiB", row_group_size="16KiB",
                     progress=False)
    assert v1.shards_total > 2
    _age(root, 7200)  # written two hours ago
    v2 = repo.append("d", _rows(400, 450), progress=False)
    v3 = repo.commit("d", _rows(1000, 1010), progress=False)  # latest: none of v1's shards
    it = iter(repo.dataset("d", v2.version).pipeline().batch(50))
    seen = [k for k in next(it)["__key__"]]
    assert repo.rm("d", v2.version) == [v2.version]
    assert repo.rm("d", v1.version) == [v1.version]
    report = repo.gc()  # the default grace, 1h
    assert report.deleted == []
    for b in it:  # the epoch goes on
        seen += b["__key__"]
    assert sorted(seen) == [f"k{i:05d}" for i in range(450)]
    assert repo.dataset("d").version == v3.version
    assert len(repo.gc(grace=0).deleted) == v1.shards_total + 1  # then they go


def test_shards_latest_still_lists_are_not_touched(tmp_path: Path) -> None:
    root = tmp_path / "root"
    repo = dl.Repository.open(root, cache_dir=tmp_path / "c")
    v1 = repo.commit("d", _rows(0, 100), progress=False)
    _age(root, 7200)
    v2 = repo.append("d", _rows(100, 120), progress=False)
    old = {f: f.stat().st_mtime for f in (root / "shards").rglob("*.parquet")}
    repo.rm("d", v2.version)  # latest steps back to v1, which lists its own shards
    now = {f: f.stat().st_mtime for f in (root / "shards").rglob("*.parquet")}
    v1_shards = {s.digest for s in repo.dataset("d", v1.version).manifest.shards}
    for f, t in now.items():
        mine = f.stem in v1_shards
        assert (t == old[f]) == mine, f  # v1's untouched, the append's touched
    repo.rm("d")  # the whole dataset: every shard's grace restarts
    assert all(f.stat().st_mtime > time.time() - 600 for f in (root / "shards").rglob("*.parquet"))
    assert repo.gc().deleted == []


def test_an_rm_that_cannot_touch_the_shards_warns(tmp_path: Path) -> None:
    """QA review60b: without write permission on the shards, rm skipped the readers' grace
    silently. The shards are made read-only by a read-only bind mount (root: CI's case)."""
    import subprocess

    import pytest

    root = tmp_path / "root"
    repo = dl.Repository.open(root, cache_dir=tmp_path / "c")
    v1 = repo.commit("d", _rows(0, 50), progress=False)
    repo.commit("d", _rows(100, 110), progress=False)
    shards = root / "shards"
    mounted = False
    if os.geteuid() == 0:
        ok = subprocess.run(["mount", "--bind", str(shards), str(shards)],
                            capture_output=True).returncode == 0
        mounted = ok and subprocess.run(["mount", "-o", "remount,bind,ro", str(shards)],
                                        capture_output=True).returncode == 0
        if ok and not mounted:
            subprocess.run(["umount", str(shards)], check=True)
        if not mounted:
            pytest.skip("root, and no read-only bind mount allowed here")
    else:  # an owner may set its files' times to now whatever their mode
        pytest.skip("a user's own shards cannot be made untouchable without root")
    try:
        with pytest.warns(UserWarning, match="rm could not restart gc's grace period"):
            repo.rm("d", v1.version)
    finally:
        subprocess.run(["umount", str(shards)], check=True)
