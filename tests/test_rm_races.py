"""rm, tag and gc racing a commit: refs never point at a missing manifest, and gc never
deletes a shard of a published version (invariants 2 and 3, with rm in the race).

Each race is one deterministic interleaving of real calls on one local root: the commit runs
in a thread (from a second Repository, as another process would) and is held at a step of
the commit protocol (its crash-test hook) while the other party runs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import dload_arrow.repository.gc as gc_module
import dload_arrow.repository.remove as remove_module
import dload_arrow.store.commit as commit_module
import dload_arrow.store.publish as publish_module
from dload_arrow import ConflictError, NotFoundError, Repository
from dload_arrow.store.names import manifest_path, shard_path
from dload_arrow.store.refs import list_refs

ROWS = [(f"k{i}", {"x": i}) for i in range(50)]


@pytest.fixture
def two(tmp_path: Path) -> tuple[Repository, Repository]:
    root = str(tmp_path / "root")
    return (Repository.open(root, cache_dir=str(tmp_path / "ca")),
            Repository.open(root, cache_dir=str(tmp_path / "cb")))


def _broken(repo: Repository, name: str) -> list[str]:
    """Refs to missing manifests, and missing shards of the manifests refs point at."""
    problems = []
    for ref, value in list_refs(repo.storage, name).items():
        if not repo.storage.exists(manifest_path(name, value.version)):
            problems.append(f"{ref} -> missing manifest {value.version[:12]}")
            continue
        for d in repo.manifests.get(name, value.version).digests():
            if not repo.storage.exists(shard_path(d)):
                problems.append(f"{ref} -> missing shard {d[:12]}")
    return problems


class Held:
    """A commit run in a thread and held at the protocol step ``step`` until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, step: str,
                 call: Callable[[], Any]) -> None:
        self.paused, self.go, self.out = threading.Event(), threading.Event(), {}
        real = module.crash_point

        def hook(at: str) -> None:
            if at == step and threading.current_thread() is self.thread:
                self.paused.set()
                self.go.wait(30)
            real(at)

        monkeypatch.setattr(module, "crash_point", hook)
        self.thread = threading.Thread(target=lambda: self.out.setdefault("v", call()))
        self.thread.start()
        assert self.paused.wait(30)

    def finish(self) -> Any:
        self.go.set()
        self.thread.join(30)
        return self.out["v"]


@pytest.fixture
def hold(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Held]]:
    made: list[Held] = []

    def start(module: Any, step: str, call: Callable[[], Any]) -> Held:
        made.append(Held(monkeypatch, module, step, call))
        return made[-1]

    yield start
    for h in made:
        h.go.set()


def test_recommitting_a_version_that_rm_removes_meanwhile_leaves_latest_readable(
        two: tuple[Repository, Repository], hold: Callable[..., Held]) -> None:
    a, b = two
    a.commit("d", [("k1", {"x": 1})], progress=False)
    v2 = a.commit("d", [("k2", {"x": 2})], progress=False).version
    held = hold(publish_module, "manifest", lambda: b.commit("d", [("k2", {"x": 2})],
                                                            progress=False))
    a.rm("d", v2)  # deletes the manifest the held commit found stored, moves latest back
    assert held.finish().version == v2
    assert a.refs("d")["latest"] == v2 and _broken(a, "d") == []
    assert Repository.open(a.storage.url, cache_dir=a.settings.cache_dir + "-x").dataset(
        "d")[0]["x"] == 2


@pytest.mark.parametrize("listing", [1, 2])
def test_a_commit_reusing_shards_of_a_version_removed_meanwhile_keeps_them_from_gc(
        two: tuple[Repository, Repository], hold: Callable[..., Held],
        monkeypatch: pytest.MonkeyPatch, listing: int) -> None:
    """The commit finishes after gc's first listing of manifests (1), or after its last,
    right before its deletes (2: QA round 10; gc had stat-ed the shards before that listing,
    still old, and deleted them from under the published version)."""
    a, b = two
    v1 = a.commit("d", ROWS, progress=False).version
    for obj in a.storage.list("shards/"):  # old enough for a 1 h grace
        path = a.storage.local_path(obj.path)
        assert path is not None
        os.utime(path, (time.time() - 7200,) * 2)
    # The same rows with other meta: every shard reused, protected by V1 (no touch)
    held = hold(commit_module, "shards", lambda: b.commit("d", ROWS, meta={"n": 1},
                                                         progress=False))
    a.rm("d", v1)
    for obj in a.storage.list("shards/"):  # the grace since the rm (which restarts it) is past
        os.utime(a.storage.local_path(obj.path) or "", (time.time() - 7200,) * 2)
    real, calls = gc_module.referenced_digests, []

    def listed_then_commit_finishes(storage: Any, *seen: Any) -> Any:
        out = real(storage, *seen)  # neither V1 (removed) nor the new manifest (not stored yet)
        calls.append(1)
        if len(calls) == listing:
            held.finish()
        return out

    monkeypatch.setattr(gc_module, "referenced_digests", listed_then_commit_finishes)
    report = a.gc(grace="1h")
    assert len(calls) == 2 and report.deleted == []
    assert _broken(a, "d") == []
    assert a.dataset("d", held.out["v"].version).num_rows == len(ROWS)


def test_rm_of_a_version_finishes_when_a_commit_moves_latest_meanwhile(
        two: tuple[Repository, Repository], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = two
    a.commit("d", [("k1", {"x": 1})], progress=False)
    v2 = a.commit("d", [("k2", {"x": 2})], progress=False).version
    a.tag("d", v2, "v2tag")
    real, landed = remove_module.list_refs, []

    def refs_then_a_commit(storage: Any, name: str) -> Any:
        out = real(storage, name)
        if not landed and not storage.exists(manifest_path("d", v2)):
            landed.append(b.commit("d", [("k3", {"x": 3})], progress=False).version)
        return out

    monkeypatch.setattr(remove_module, "list_refs", refs_then_a_commit)
    assert a.rm("d", v2) == [v2]  # no ConflictError halfway
    assert a.refs("d") == {"latest": landed[0]}  # the tag went too; the commit stays latest
    assert _broken(a, "d") == []


def test_tag_refuses_a_version_removed_since_its_manifest_was_cached(
        two: tuple[Repository, Repository]) -> None:
    a, b = two
    v1 = a.commit("d", [("k1", {"x": 1})], progress=False).version
    a.commit("d", [("k2", {"x": 2})], progress=False)
    assert b.dataset("d", v1)[0]["x"] == 1  # b has v1's manifest in memory now
    a.rm("d", v1)
    with pytest.raises(NotFoundError, match="removed"):
        b.tag("d", v1, "best")
    assert "best" not in a.refs("d") and _broken(a, "d") == []


def test_an_rm_right_after_the_ref_moved_wins_over_the_commit(
        two: tuple[Repository, Repository], monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow import ConflictError

    a, b = two
    v1 = a.commit("d", [("k1", {"x": 1})], progress=False).version
    v2 = a.commit("d", [("k2", {"x": 2})], progress=False).version
    real = publish_module.move_ref

    def move_then_rm(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        b.rm("d", v1)  # latest steps back to v2 and v1's manifest goes
        return out

    monkeypatch.setattr(publish_module, "move_ref", move_then_rm)
    with pytest.raises(ConflictError, match="removed"):
        a.commit("d", [("k1", {"x": 1})], progress=False)  # v1's samples again
    assert a.refs("d") == {"latest": v2}
    assert [v.version for v in a.versions("d")] == [v2]  # what the user removed stays gone
    assert _broken(a, "d") == []


def test_a_dataset_whose_only_ref_dangles_can_be_removed(
        two: tuple[Repository, Repository]) -> None:
    a, _ = two
    v = a.commit("d", [("k1", {"x": 1})], progress=False).version
    a.storage.delete(manifest_path("d", v))  # what an rm that lost a race leaves
    assert a.rm("d") == []
    assert a.datasets() == [] and list_refs(a.storage, "d") == {}


@pytest.mark.parametrize("by_version", [True, False])
def test_the_cli_removes_a_dataset_whose_only_ref_dangles(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], by_version: bool) -> None:
    """QA: `dload rm d --version V --yes`, what reading such a dataset advises, and `dload rm
    d --yes` both said the dataset "was removed" (at its commit's time) and removed nothing."""
    from cli_run import runner

    root = str(tmp_path / "root")
    a = Repository.open(root, cache_dir=str(tmp_path / "ca"))
    v = a.commit("d", [("k1", {"x": 1})], progress=False).version
    a.storage.delete(manifest_path("d", v))
    run = runner(capsys, ["--root", root, "--cache-dir", str(tmp_path / "cc")])
    err = run("versions", "d", rc=1).err
    assert "has refs but no stored version (latest -> " in err and "was removed" not in err
    assert "`dload rm d --yes`" in err
    run("rm", "d", *(["--version", v] if by_version else []), "--yes")
    assert a.datasets() == [] and list_refs(a.storage, "d") == {}


def test_rm_never_steps_latest_onto_an_appends_manifest_that_no_ref_named(
        two: tuple[Repository, Repository], monkeypatch: pytest.MonkeyPatch) -> None:
    """QA: rm of the version an append extends stepped `latest` onto the append's manifest
    (stored, not yet published); the append then found its parent gone and deleted that
    manifest: `latest` dangled."""
    a, b = two
    v1 = a.commit("d", [(f"a{i}", {"x": i}) for i in range(5)], progress=False).version
    real, removed = publish_module.check_stored, []

    def check_stored(storage: Any, *args: Any) -> Any:  # the append's manifest is stored
        if not removed:
            removed.append(b.rm("d", v1))
        return real(storage, *args)

    monkeypatch.setattr(publish_module, "check_stored", check_stored)
    with pytest.raises(ConflictError, match="was removed while it ran"):
        a.append("d", [(f"b{i}", {"x": i}) for i in range(5)], progress=False)
    assert removed == [[v1]]
    assert list_refs(a.storage, "d") == {}  # no version left that a ref ever named
    assert a.datasets() == []
    assert _broken(a, "d") == []
