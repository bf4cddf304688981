"""Invariant 2: concurrent commits to one dataset each keep their version; ``latest`` moves by
compare-and-swap, so the log is one unbroken chain and no move is silently lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dload_arrow import Repository
from dload_arrow.store.refs import move_ref

SCRIPT = r"""
import os, sys, time
from pathlib import Path
from dload_arrow import Repository

root, who, sync = sys.argv[1], sys.argv[2], Path(sys.argv[3])
repo = Repository.open(root)
rows = [(f"{who}-{i:04d}", {"x": i, "who": who}) for i in range(200)]
(sync / f"ready-{who}").touch()
while not (sync / "go").exists():  # start barrier: all processes commit at once
    time.sleep(0.005)
v = repo.commit("shared", rows, shard_size=4000, row_group_size=1000, progress=False)
print(v.version)
"""


def commit_concurrently(root: str, writers: list[str], sync: Path) -> list[str]:
    sync.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, root, who, str(sync)],
            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for who in writers
    ]
    deadline = time.monotonic() + 120
    while not all((sync / f"ready-{w}").exists() for w in writers):
        assert time.monotonic() < deadline, "writers did not start"
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.01)
    (sync / "go").touch()
    versions = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        versions.append(out.strip())
    return versions


def assert_unbroken_chain(repo: Repository, name: str, ref: str = "latest") -> list[str]:
    """The ref's log is seq 1..n, each move starting where the previous one ended."""
    entries = sorted((e for e in repo.log(name) if e.ref == ref), key=lambda e: e.seq)
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    previous = None
    for e in entries:
        assert e.previous == previous, f"move {e.seq} lost an update"
        previous = e.version
    assert repo.refs(name)[ref] == previous
    return [str(e.version) for e in entries]


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_concurrent_commits_keep_both_versions_and_log_both_moves(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, cache_dir: str
) -> None:
    root = str(request.getfixturevalue(f"{backend}_root"))
    writers = ["a", "b", "c"]
    versions = commit_concurrently(root, writers, tmp_path / "sync")
    assert len(set(versions)) == len(writers)
    repo = Repository.open(root, cache_dir=cache_dir)
    listed = {v.version for v in repo.versions("shared")}
    assert listed == set(versions)
    moved = assert_unbroken_chain(repo, "shared")
    assert sorted(moved) == sorted(versions)
    assert repo.dataset("shared").version in versions
    assert repo.dataset("shared").version == moved[-1]
    assert all(v.time is not None for v in repo.versions("shared"))


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_racing_ref_moves_from_threads_form_one_chain(
    backend: str, request: pytest.FixtureRequest, cache_dir: str
) -> None:
    import threading

    root = str(request.getfixturevalue(f"{backend}_root"))
    repo = Repository.open(root, cache_dir=cache_dir)
    targets = [f"{i:064x}" for i in range(1, 9)]
    barrier = threading.Barrier(len(targets))

    def mover(vid: str) -> None:
        barrier.wait()
        move_ref(repo.storage, "refs-race", "latest", vid, action="test")

    threads = [threading.Thread(target=mover, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    moved = assert_unbroken_chain(repo, "refs-race")
    assert sorted(moved) == sorted(targets)


APPEND_SCRIPT = r"""
import sys, time
from pathlib import Path
from dload_arrow import Repository

root, who, sync = sys.argv[1], sys.argv[2], Path(sys.argv[3])
repo = Repository.open(root)
(sync / f"ready-{who}").touch()
while not (sync / "go").exists():
    time.sleep(0.005)
for n in range(4):
    rows = [(f"{who}-{n}-{i:03d}", {"x": i, "who": who}) for i in range(50)]
    print(repo.append("shared", rows, progress=False).version)
"""


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_concurrent_appends_keep_every_row(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, cache_dir: str
) -> None:
    root = str(request.getfixturevalue(f"{backend}_root"))
    repo = Repository.open(root, cache_dir=cache_dir)
    repo.commit("shared", [(f"base-{i:03d}", {"x": i, "who": "base"}) for i in range(50)],
                progress=False)
    sync = tmp_path / "sync"
    sync.mkdir()
    writers = ["a", "b"]
    procs = [subprocess.Popen([sys.executable, "-c", APPEND_SCRIPT, root, w, str(sync)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in writers]
    deadline = time.monotonic() + 120
    while not all((sync / f"ready-{w}").exists() for w in writers):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    (sync / "go").touch()
    for p in procs:
        _out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    keys = [s["__key__"] for s in repo.dataset("shared").samples()]
    expected = {f"base-{i:03d}" for i in range(50)} | {
        f"{w}-{n}-{i:03d}" for w in writers for n in range(4) for i in range(50)}
    assert len(keys) == len(expected) == 450 and set(keys) == expected
    moved = assert_unbroken_chain(repo, "shared")
    # a rebased append leaves no manifest behind built on a parent it did not land on
    assert {v.version for v in repo.versions("shared")} == set(moved)
    appends = [e for e in repo.log("shared") if e.action == "append"]
    assert len(appends) == 8  # every append published, on top of the one before


def test_an_append_whose_parent_is_removed_and_collected_publishes_nothing(
        local_root: str, cache_dir: str) -> None:
    import glob

    from dload_arrow import ConflictError

    repo = Repository.open(local_root, cache_dir=cache_dir)
    v1 = repo.commit("d", [(f"a{i:03d}", {"x": i}) for i in range(100)], progress=False)
    old = time.time() - 7200  # committed two hours ago: past gc's grace
    for f in glob.glob(f"{local_root}/shards/**/*.parquet", recursive=True):
        os.utime(f, (old, old))
    other = Repository.open(local_root, cache_dir=cache_dir)

    def more():  # another process removes the parent and collects while this encodes
        other.rm("d", v1.version)
        for f in glob.glob(f"{local_root}/shards/**/*.parquet", recursive=True):
            os.utime(f, (old, old))  # the grace since the rm (which restarts it) is past
        assert len(other.gc(grace="1h").deleted) == 1
        for i in range(10):
            yield f"b{i:03d}", {"x": 1000 + i}

    with pytest.raises(ConflictError, match="was removed while it ran"):
        repo.append("d", more(), progress=False)
    assert repo.datasets() == []
    assert list((Path(local_root) / "datasets" / "d" / "manifests").glob("*.arrow")) == []


def test_a_rebased_append_keeps_the_meta_of_the_version_it_lands_on(
        local_root: str, cache_dir: str) -> None:
    repo = Repository.open(local_root, cache_dir=cache_dir)
    repo.commit("d", [(f"a{i:03d}", {"x": i}) for i in range(10)], meta={"who": "first"},
                recipe="r1", progress=False)
    other = Repository.open(local_root, cache_dir=cache_dir)

    def more():  # another writer appends with new meta while this one encodes
        other.append("d", [("c000", {"x": -1})], meta={"who": "second"}, recipe="r2",
                     progress=False)
        for i in range(5):
            yield f"b{i:03d}", {"x": 100 + i}

    v = repo.append("d", more(), progress=False)
    assert v.num_rows == 16
    assert v.manifest.meta == {"who": "second"} and v.manifest.recipe == "r2"
    mine = repo.append("d", [("z", {"x": 0})], meta={"who": "mine"}, progress=False)
    assert mine.manifest.meta == {"who": "mine"} and mine.manifest.recipe == "r2"


def test_shard_sizes_may_be_given_as_text(repo: Repository) -> None:
    from dload_arrow import ConfigError

    v = repo.commit("d", [(f"k{i:04d}", {"x": i}) for i in range(3000)], shard_size="8KiB",
                    row_group_size="2KiB", progress=False)
    assert v.shards_total > 1
    for bad in ("0", "lots", 0, -5):
        with pytest.raises(ConfigError, match="shard_size"):
            repo.commit("e", [("a", {"x": 1})], shard_size=bad, progress=False)
