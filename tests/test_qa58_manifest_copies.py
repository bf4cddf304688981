"""The cache dir's copies of manifests are bounded (carried from QA ops56: one file per
version read or written, kept until ``cache clear``; appending 100,000 times wrote 165 MB)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dload_arrow import Repository
from dload_arrow.store import manifest_cache
from dload_arrow.store.manifest_cache import trim_copies


def _copies(cache: Path) -> list[Path]:
    return sorted(cache.glob("manifests/*/*.arrow"))


def test_copies_past_the_bound_are_trimmed_and_refetched(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repo = Repository.open(tmp_path / "root", cache_dir=cache)
    versions = [repo.commit("d", [(f"k{i}", {"n": i + j}) for i in range(5)],
                            progress=False).version for j in range(20)]
    Repository.open(tmp_path / "root", cache_dir=cache).manifest("d", versions[0])
    one = _copies(cache)[0].stat().st_size
    monkeypatch.setattr(manifest_cache, "DISK_BYTES", 6 * one)
    monkeypatch.setattr(manifest_cache, "DISK_CHECK_EVERY", 1)
    reader = Repository.open(tmp_path / "root", cache_dir=cache)
    for v in versions:  # each read from the root once, a copy left in the cache dir
        reader.manifest("d", v)
    got = _copies(cache)
    assert 1 < len(got) <= 7, len(got)  # 20 copies written; at most the bound (+ one)
    assert sum(p.stat().st_size for p in got) <= 7 * one
    fresh = Repository.open(tmp_path / "root", cache_dir=cache)  # trimmed: from the root
    assert fresh.dataset("d", versions[0]).to_arrow().column("n").to_pylist() == list(range(5))
    assert fresh.manifests.fetched == 1

def test_the_least_recently_used_copies_go_first(tmp_path: Path) -> None:
    for i in range(8):
        p = tmp_path / f"{i:064x}.arrow"
        p.write_bytes(b"x" * 100)
        os.utime(p, ns=(10**18 + i, 10**18 + i))
    os.utime(tmp_path / f"{0:064x}.arrow")  # used just now
    (tmp_path / "other.tmp").write_bytes(b"y" * 10_000)  # not a copy: never counted or deleted
    trim_copies(tmp_path, 600)
    left = sorted(p.name for p in tmp_path.glob("*.arrow"))
    assert left == [f"{i:064x}.arrow" for i in (0, 5, 6, 7)]  # 800 B -> 400 B (<= 3/4 of 600)
    assert (tmp_path / "other.tmp").exists()
    trim_copies(tmp_path, 600)  # under the bound: nothing more
    assert len(list(tmp_path.glob("*.arrow"))) == 4
