"""Two writers at once (rm and rm, derive and rm, rm of a dataset and a commit, tag and rm,
untag and tag): whatever interleaving, no ref is left on a removed version while both report
success.

Each race is one deterministic interleaving of real calls on one local root: the second
writer (its own Repository, as another process would) runs from a hook on the first one's
ref move, the risky moment; the storage is real.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dload_arrow.repository.derive_memo as derive_module
import dload_arrow.repository.remove as remove_module
import dload_arrow.repository.tags as tags_module
import dload_arrow.store.publish as publish_module
from dload_arrow import ConflictError, NotFoundError, Repository
from dload_arrow.storage.local import LocalStorage
from dload_arrow.store.names import manifest_path
from dload_arrow.store.refs import list_refs


def _dangling(repo: Repository, name: str) -> list[str]:
    """Refs of ``name`` that point at a missing manifest."""
    return [f"{ref} -> {v.version[:12]}" for ref, v in list_refs(repo.storage, name).items()
            if not repo.storage.exists(manifest_path(name, v.version))]


def _before_first(monkeypatch: pytest.MonkeyPatch, module: Any, attr: str,
                  other: Any) -> None:
    """Run ``other()`` once, just before the first call of ``module.attr``."""
    real = getattr(module, attr)

    def hooked(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(module, attr, real)
        other()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, attr, hooked)


def test_two_rms_at_once_leave_latest_on_a_version_that_remains(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    v2 = repo.append("ds", [("b", {"x": 2})], progress=False).version
    v3 = repo.append("ds", [("c", {"x": 3})], progress=False).version
    # rm v3 is about to step latest back to v2 when another rm removes v2
    _before_first(monkeypatch, remove_module, "move_ref",
                  lambda: Repository.open(root).rm("ds", v2))
    assert repo.rm("ds", v3) == [v3]
    fresh = Repository.open(root)
    assert fresh.refs("ds") == {"latest": v1} and _dangling(fresh, "ds") == []
    assert fresh.dataset("ds").to_pandas()["x"].tolist() == [1]


def test_an_rm_whose_version_became_the_fallback_meanwhile_keeps_it_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    v2 = repo.append("ds", [("b", {"x": 2})], progress=False).version
    v3 = repo.append("ds", [("c", {"x": 3})], progress=False).version
    other = Repository.open(root)
    real_delete = other.storage.delete

    def rm_v3_first(path: str) -> None:
        # rm v2 saw latest on v3 and left it; now, before it deletes v2's manifest, rm v3
        # runs whole: it steps latest back to v2, still stored at its check
        if path == manifest_path("ds", v2):
            monkeypatch.setattr(other.storage, "delete", real_delete)
            assert repo.rm("ds", v3) == [v3]
        real_delete(path)

    monkeypatch.setattr(other.storage, "delete", rm_v3_first)
    with pytest.raises(ConflictError, match="rm again"):
        other.rm("ds", v2)
    fresh = Repository.open(root)
    assert fresh.refs("ds") == {"latest": v2} and _dangling(fresh, "ds") == []
    assert fresh.dataset("ds").to_pandas()["x"].tolist() == [1, 2]
    assert fresh.rm("ds", v2) == [v2] and fresh.refs("ds") == {"latest": v1}


@pytest.mark.parametrize("collected", [False, True], ids=["rm", "rm and gc"])
def test_a_derive_reusing_its_memo_as_rm_removes_that_version_leaves_it_readable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collected: bool) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    repo.commit("src", [(f"k{i}", {"x": i}) for i in range(100)], progress=False)
    pipe = repo.dataset("src").pipeline().map(lambda s: {**s, "y": s["x"] + 1})
    v1 = repo.derive("der", pipe).version
    repo.commit("der", [("other", {"x": 1, "y": 2})], progress=False)  # latest moves away

    def rm_it() -> None:  # the memo was found, latest is about to move back to it
        other = Repository.open(root)
        other.rm("der", v1)
        if collected:
            assert other.gc(grace=0).deleted  # its shard goes too
    _before_first(monkeypatch, derive_module, "move_ref", rm_it)
    assert repo.derive("der", pipe).version == v1
    fresh = Repository.open(root)
    assert fresh.refs("der") == {"latest": v1} and _dangling(fresh, "der") == []
    assert fresh.dataset("der").to_pandas()["y"].tolist() == list(range(1, 101))


def test_a_derive_whose_reused_version_rm_removes_right_after_the_move_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    repo.commit("src", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    pipe = repo.dataset("src").pipeline()
    v1 = repo.derive("der", pipe).version
    v2 = repo.commit("der", [("other", {"x": 1})], progress=False).version
    real = derive_module.move_ref

    def move_then_rm(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        Repository.open(root).rm("der", v1)  # steps latest back to v2: the rm wins
        return out

    monkeypatch.setattr(derive_module, "move_ref", move_then_rm)
    with pytest.raises(ConflictError, match="derive again"):
        repo.derive("der", pipe)
    fresh = Repository.open(root)
    assert fresh.refs("der") == {"latest": v2} and _dangling(fresh, "der") == []


def test_a_commit_that_lands_while_the_whole_dataset_is_removed_is_kept_and_rm_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "root")
    Repository.open(root).commit("ds", [(f"k{i}", {"x": i}) for i in range(10)],
                                 progress=False)
    stored, go, out = threading.Event(), threading.Event(), {}
    real_point = publish_module.crash_point

    def pause(step: str) -> None:  # the commit's manifest is stored, latest not moved yet
        if step == "manifest" and threading.current_thread() is commit:
            stored.set()
            go.wait(30)
        real_point(step)

    monkeypatch.setattr(publish_module, "crash_point", pause)
    commit = threading.Thread(target=lambda: out.setdefault(
        "v", Repository.open(root).commit("ds", [("new", {"x": 99})], progress=False)))
    commit.start()
    assert stored.wait(30)
    rm = Repository.open(root)
    real_list = rm.storage.list

    def listed_then_commit(prefix: str) -> Any:
        # rm has deleted the refs and lists what to delete: the commit moves latest and
        # checks its manifest (still there) before rm deletes it
        found = real_list(prefix)
        if prefix == "datasets/ds/" and not any(o.path.endswith("/refs/latest") for o in found):
            go.set()  # (rm's listing after its refs went; not its first check for nested folders)
            commit.join(30)
        return found

    monkeypatch.setattr(rm.storage, "list", listed_then_commit)
    with pytest.raises(ConflictError, match="a commit published to it while rm ran"):
        rm.rm("ds")
    v = out["v"].version
    fresh = Repository.open(root)
    assert fresh.refs("ds") == {"latest": v} and _dangling(fresh, "ds") == []
    assert fresh.dataset("ds").to_pandas()["x"].tolist() == [99]
    assert fresh.rm("ds") == [v] and fresh.datasets() == []


def test_a_tag_moved_to_a_version_rm_removes_meanwhile_is_deleted_again_and_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [(f"k{i}", {"x": i}) for i in range(10)], progress=False).version
    v2 = repo.append("ds", [("z", {"x": 1})], progress=False).version
    # tag found v1 stored and is about to move the tag when an rm of v1 runs
    _before_first(monkeypatch, tags_module, "move_ref",
                  lambda: Repository.open(root).rm("ds", v1))
    with pytest.raises(NotFoundError, match="tag 'good' was moved to it"):
        repo.tag("ds", v1, "good")
    fresh = Repository.open(root)
    assert fresh.refs("ds") == {"latest": v2} and _dangling(fresh, "ds") == []


def test_an_rm_that_deletes_the_manifest_after_a_tag_landed_keeps_the_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    v2 = repo.append("ds", [("b", {"x": 2})], progress=False).version
    other = Repository.open(root)
    real_delete = other.storage.delete

    def tag_first(path: str) -> None:  # rm moved v1's refs; the tag lands before the delete
        if path == manifest_path("ds", v1):
            monkeypatch.setattr(other.storage, "delete", real_delete)
            assert repo.tag("ds", v1, "good") == v1
        real_delete(path)

    monkeypatch.setattr(other.storage, "delete", tag_first)
    with pytest.raises(ConflictError, match="rm again"):
        other.rm("ds", v1)
    fresh = Repository.open(root)
    assert fresh.refs("ds") == {"latest": v2, "good": v1} and _dangling(fresh, "ds") == []


def test_a_local_reader_whose_version_rm_and_gc_took_meanwhile_is_told_so(
        tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    rng = np.random.default_rng(0)  # incompressible: several shards
    rows = [(f"k{i:05d}", {"x": i, "pad": rng.bytes(2000)}) for i in range(600)]
    v1 = repo.commit("ds", rows, shard_size="200KB", row_group_size="50KB", progress=False)
    repo.commit("ds", [("only", {"x": 1, "pad": b""})], progress=False)
    ds = repo.dataset("ds", v1.version)
    assert len(ds.manifest.shards) > 2
    with pytest.raises(NotFoundError) as e:
        for i, _ in enumerate(ds.samples()):
            if i == 10:  # another process removes the version being read and collects it
                other = Repository.open(root)
                other.rm("ds", v1.version)
                assert other.gc(grace=0).deleted
    assert (f"version {v1.version[:12]} of 'ds' was removed (rm) and gc collected its shards"
            in str(e.value))
    assert "dload verify" not in str(e.value)  # latest is intact: nothing to verify


def test_an_untag_that_undoes_a_concurrent_tag_move_says_so_and_logs_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    v2 = repo.append("ds", [("b", {"x": 2})], progress=False).version
    repo.tag("ds", v1, "prod")
    real_delete = repo.storage.delete

    def tag_first(path: str) -> None:  # untag read prod (v1); another process moves it
        if path.endswith("/refs/prod"):
            monkeypatch.setattr(repo.storage, "delete", real_delete)
            assert Repository.open(root).tag("ds", v2, "prod") == v2
        real_delete(path)

    monkeypatch.setattr(repo.storage, "delete", tag_first)
    with pytest.raises(ConflictError, match=f"ds:prod.*to {v2[:12]}.*undone"):
        repo.untag("ds", "prod")
    log = [(e.seq, e.action, e.version) for e in Repository.open(root).log("ds")
           if e.ref == "prod"]
    assert log == [(1, "tag", v1), (2, "tag", v2), (3, "delete", None)]



def test_random_access_after_rm_and_gc_says_so_and_a_missing_shard_is_no_absent_key(
        tmp_path: Path) -> None:
    """QA: `k in ds` said False and get(k, default=...) returned the default when the key's
    shard was gone (every NotFoundError read as "no such key"), and ds[i]/get/take said the
    shard was "deleted outside dload?" where the other readers say rm and gc took it."""
    from dload_arrow import MissingKeyError

    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    repo.commit("ds", [("only", {"x": 1})], progress=False)
    ds = repo.dataset("ds", v1.version)
    assert "nope" not in ds and ds.get("nope", default=7) == 7
    with pytest.raises(MissingKeyError, match="no sample with key 'nope'"):
        ds.get("nope")
    repo.rm("ds", v1.version)
    assert repo.gc(grace=0).deleted
    for read in (lambda: ds[5], lambda: ds.get("k1"), lambda: "k1" in ds,
                 lambda: ds.get("k1", default=None), lambda: ds.take([1, 2])):
        with pytest.raises(NotFoundError, match=f"{v1.version[:12]}.*was removed \\(rm\\) and "
                                                "gc collected its shards") as e:
            read()
        assert not isinstance(e.value, MissingKeyError)


class _AppliedThenFailed(LocalStorage):
    """A store that applies the first conditional write to a path matching ``target`` and
    then answers as if it lost (what a retried request sees after a 5xx or a dropped
    connection: a 412 against its own write)."""

    def __init__(self, root: str, target: str) -> None:
        super().__init__(root)
        self.target = target
        self.fired = False

    def _once(self, path: str) -> bool:
        if self.target in path and not self.fired:
            self.fired = True
            return True
        return False

    def put_if_absent(self, path: str, data: bytes | memoryview) -> bool:
        done = super().put_if_absent(path, data)
        return False if self._once(path) else done

    def compare_and_swap(self, path: str, data: bytes, token: str | None) -> bool:
        done = super().compare_and_swap(path, data, token)
        return False if self._once(path) else done


@pytest.mark.parametrize("target", ["/refs/latest", "/refs/v1", "/log/latest/", "/log/v1/"])
def test_a_write_the_store_applied_but_answered_as_failed_is_logged_once(
        tmp_path: Path, target: str) -> None:
    """QA (S3): a ref move applied but answered 5xx was never logged (the retry found the
    ref already there), and a log entry so answered was written twice, after which an
    untag said another writer had moved the tag."""
    from dload_arrow.store.refs import move_ref, read_log

    root = str(tmp_path / "root")
    repo = Repository.open(root)
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    v2 = repo.append("ds", [("b", {"x": 2})], progress=False).version
    store = _AppliedThenFailed(root, target)
    move_ref(store, "ds", "v1", v1, action="tag")
    assert move_ref(store, "ds", "latest", v1, action="commit").version == v1  # rollback
    move_ref(store, "ds", "latest", v2, action="commit")
    assert store.fired
    log = sorted((e.ref, e.seq, e.version) for e in read_log(store, "ds"))
    assert log == [("latest", 1, v1), ("latest", 2, v2), ("latest", 3, v1), ("latest", 4, v2),
                   ("v1", 1, v1)]
    repo.untag("ds", "v1")  # no false "another writer moved it"
    assert "v1" not in repo.refs("ds")
