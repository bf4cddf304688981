"""QA round 8, crashes and races: a gc whose grace is shorter than a commit, an rm cut off
half-way, and a first commit killed after storing its manifest.

Each race is one deterministic order of real calls on a real local root, held in place by
events in wrappers of our own calls (never a fake backend).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from cli_run import RunFn, runner
from test_rm_races import _broken

import dload_arrow.repository.gc as gc_module
import dload_arrow.repository.remove as remove_module
import dload_arrow.store.publish as publish_module
from dload_arrow import ConflictError, NotFoundError, Repository
from dload_arrow.store.names import manifest_path


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> RunFn:
    return runner(capsys)


def _open(root: str, tmp_path: Path, cache: str) -> Repository:
    return Repository.open(root, cache_dir=str(tmp_path / cache))


def _xs(repo: Repository, name: str) -> list[Any]:
    return sorted(s["x"] for s in repo.dataset(name).samples())


# --- 1. gc with a grace shorter than a commit --------------------------------------------


def test_gc_reads_a_manifest_stored_after_its_first_read_before_it_deletes(
        local_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The order of /tmp/qa8/crash/repro_gc_publishes_broken.py: the commit has uploaded its
    # shard; gc lists shards and reads the manifests; the commit stores its manifest, finds
    # its shards stored and moves latest; gc then stats the shard (older than its grace).
    _open(local_root, tmp_path, "c0").commit("ds", [("a", {"x": 1})], progress=False)
    committer, collector = _open(local_root, tmp_path, "c1"), _open(local_root, tmp_path, "c2")
    at_manifest, gc_read, commit_done = threading.Event(), threading.Event(), threading.Event()
    real_put, real_info = committer.storage.put_if_absent, collector.storage.info

    def put(path: str, data: Any) -> bool:
        if "/manifests/" in path and not at_manifest.is_set():
            at_manifest.set()
            assert gc_read.wait(30)
        return bool(real_put(path, data))

    def info(path: str) -> Any:
        if not gc_read.is_set():  # gc has listed shards and read every manifest
            gc_read.set()
            assert commit_done.wait(30)
        return real_info(path)

    monkeypatch.setattr(committer.storage, "put_if_absent", put)
    monkeypatch.setattr(collector.storage, "info", info)
    out: dict[str, Any] = {}

    def commit() -> None:
        try:
            out["v"] = committer.commit("ds", [("b", {"x": 2})], progress=False).version
        finally:
            commit_done.set()

    t = threading.Thread(target=commit)
    t.start()
    assert at_manifest.wait(30)
    report = collector.gc(grace="0s")
    t.join(30)
    assert gc_read.is_set() and out["v"]
    assert report.deleted == [] and report.kept_referenced == 2
    fresh = _open(local_root, tmp_path, "c3")
    assert fresh.refs("ds")["latest"] == out["v"]
    assert _broken(fresh, "ds") == [] and _xs(fresh, "ds") == [2]


def test_gc_lists_the_manifests_once_more_per_batch_and_reads_each_once(
        local_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _open(local_root, tmp_path, "c")
    for i in range(5):
        repo.commit(f"d{i}", [(f"k{i}", {"x": i})], progress=False)
    for i in range(3):
        repo.rm(f"d{i}")  # 3 unreferenced shards
    monkeypatch.setattr(gc_module, "BATCH", 2)
    listed: list[str] = []
    read: list[str] = []
    real_list, real_read = repo.storage.list, repo.storage.read

    def counted_list(prefix: str) -> Any:
        listed.append(prefix)
        return real_list(prefix)

    def counted_read(path: str) -> Any:
        read.append(path)
        return real_read(path)

    monkeypatch.setattr(repo.storage, "list", counted_list)
    monkeypatch.setattr(repo.storage, "read", counted_read)
    report = repo.gc(grace="0s")
    assert len(report.deleted) == 3 and report.kept_referenced == 2
    assert listed.count("datasets/") == 1 + 2  # the first read, then one per batch of 2
    assert sorted(read) == sorted(set(read)) and len(read) == 2  # each manifest read once


def test_an_append_rebased_while_a_gc_with_no_grace_runs_keeps_its_shards_and_lands(
        local_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The append loses its race to another append, so its manifest is no longer the one to
    # publish; a gc runs while it rebases. That manifest must still list its shards then.
    base = _open(local_root, tmp_path, "c0")
    base.commit("d", [(f"k{i:04d}", {"x": i}) for i in range(10)], progress=False)
    a, b = _open(local_root, tmp_path, "ca"), _open(local_root, tmp_path, "cb")
    collector = _open(local_root, tmp_path, "cc")
    real_move, real_overlap = publish_module.move_ref, publish_module.overlapping_shards
    state: dict[str, Any] = {"busy": False, "lost": False}

    def move(*args: Any, **kwargs: Any) -> Any:
        if not state["busy"] and not state["lost"]:
            state["busy"] = True  # the other append lands first
            b.append("d", [(f"k{50 + i:04d}", {"x": 50 + i}) for i in range(5)],
                     progress=False)
            state["busy"], state["lost"] = False, True
        return real_move(*args, **kwargs)

    def overlap(*args: Any, **kwargs: Any) -> Any:
        if state["lost"] and "gc" not in state:  # rebasing: before its new manifest
            state["gc"] = collector.gc(grace="0s")
        return real_overlap(*args, **kwargs)

    monkeypatch.setattr(publish_module, "move_ref", move)
    monkeypatch.setattr(publish_module, "overlapping_shards", overlap)
    v = a.append("d", [(f"k{100 + i:04d}", {"x": 100 + i}) for i in range(5)], progress=False)
    assert state["gc"].deleted == []
    fresh = _open(local_root, tmp_path, "c3")
    assert fresh.refs("d")["latest"] == v.version and _broken(fresh, "d") == []
    assert _xs(fresh, "d") == list(range(10)) + list(range(50, 55)) + list(range(100, 105))
    assert len(fresh.versions("d")) == 3  # the manifest of the lost race went once rebased


# --- 2. an rm cut off half-way -----------------------------------------------------------


@pytest.mark.parametrize("cut_at", ["ref move", "manifest delete"])
def test_an_rm_of_latest_cut_off_half_way_leaves_a_readable_dataset(
        local_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut_at: str) -> None:
    repo = _open(local_root, tmp_path, "c")
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    v2 = repo.commit("ds", [("b", {"x": 2})], progress=False).version

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # Ctrl-C (or a kill) at this call

    if cut_at == "ref move":
        monkeypatch.setattr(remove_module, "move_ref", interrupted)
    else:
        real_delete = repo.storage.delete
        monkeypatch.setattr(repo.storage, "delete", lambda p: (
            interrupted() if p == manifest_path("ds", v2) else real_delete(p)))
    with pytest.raises(KeyboardInterrupt):
        repo.rm("ds", v2)
    monkeypatch.undo()
    fresh = _open(local_root, tmp_path, "c2")
    assert _broken(fresh, "ds") == []
    assert fresh.dataset("ds").version in (v1, v2)
    assert repo.rm("ds", v2) == [v2]  # running it again finishes it
    assert fresh.refs("ds") == {"latest": v1} and _xs(fresh, "ds") == [1]


def test_a_commit_republishing_a_version_while_rm_removes_it_wins(
        local_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rm has moved latest back; before it deletes the manifest, a commit of the same samples
    # moves latest to that version again and finds its manifest stored.
    a, b = _open(local_root, tmp_path, "ca"), _open(local_root, tmp_path, "cb")
    a.commit("ds", [("a", {"x": 1})], progress=False)
    v2 = a.commit("ds", [("b", {"x": 2})], progress=False).version
    real_delete = a.storage.delete

    def commit_then_delete(path: str) -> None:
        if path == manifest_path("ds", v2):
            assert b.commit("ds", [("b", {"x": 2})], progress=False).version == v2
        real_delete(path)

    monkeypatch.setattr(a.storage, "delete", commit_then_delete)
    with pytest.raises(ConflictError, match="published it again while rm ran"):
        a.rm("ds", v2)
    fresh = _open(local_root, tmp_path, "c2")
    assert fresh.refs("ds") == {"latest": v2} and _broken(fresh, "ds") == []
    assert _xs(fresh, "ds") == [2]


def test_latest_on_a_removed_manifest_says_an_rm_was_interrupted_and_how_to_finish_it(
        local_root: str, tmp_path: Path, run: RunFn) -> None:
    repo = _open(local_root, tmp_path, "c")
    repo.commit("ds", [("a", {"x": 1})], progress=False)
    v2 = repo.commit("ds", [("b", {"x": 2})], progress=False).version
    repo.storage.delete(manifest_path("ds", v2))  # what an older dload's cut-off rm left
    fix = f"`dload rm ds --version {v2} --yes`"
    expected = (f"latest of 'ds' points at removed version {v2[:12]} (an interrupted rm?): "
                f"run {fix} to finish it")
    fresh = _open(local_root, tmp_path, "c2")
    with pytest.raises(NotFoundError) as e:
        fresh.dataset("ds")
    assert str(e.value).strip('"') == expected
    where = ("--root", local_root, "--cache-dir", str(tmp_path / "c3"))
    assert expected in run("info", "ds", *where, rc=1).err
    run("rm", "ds", "--version", v2, "--yes", *where)  # the fix the message gives
    assert _xs(_open(local_root, tmp_path, "c4"), "ds") == [1]


# --- 4. a first commit killed after storing its manifest ---------------------------------


def test_a_first_commit_stopped_after_its_manifest_is_told_as_unpublished(
        local_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: RunFn) -> None:
    repo = _open(local_root, tmp_path, "c")

    def stop(step: str) -> None:
        if step == "manifest":  # DLOAD_CRASH_AT=manifest, without the SIGKILL
            raise KeyboardInterrupt

    monkeypatch.setattr(publish_module, "crash_point", stop)
    with pytest.raises(KeyboardInterrupt):
        repo.commit("ds", [("a", {"x": 1})], progress=False)
    monkeypatch.undo()
    assert repo.datasets() == [] and len(repo.versions("ds")) == 1
    hint = ("'ds' has 1 unpublished version(s) (a commit that did not finish, unless one is "
            "still running in another process: then retry in a moment): commit again to "
            "publish, or `dload rm ds --yes` to remove them")
    with pytest.raises(NotFoundError) as e:
        repo.dataset("ds")
    assert hint in str(e.value) and "no datasets yet" not in str(e.value)
    where = ("--root", local_root, "--cache-dir", str(tmp_path / "c2"))
    assert hint in run("info", "ds", *where, rc=1).err
    assert repo.gc(grace="0s").deleted == []  # its manifest keeps its shards, until rm
    run("rm", "ds", "--yes", *where)
    assert len(repo.gc(grace="0s").deleted) == 1
    repo.commit("ds", [("a", {"x": 1})], progress=False)  # or commit again: published
    assert repo.datasets() == ["ds"] and _xs(repo, "ds") == [1]
