"""Invariant 3: gc deletes exactly the shards no manifest references, and none younger than
the grace period; rm moves refs back to surviving versions."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from readback import shard_paths

from dload_arrow import NotFoundError, Repository
from dload_arrow.store.names import shard_path

SMALL: dict[str, Any] = {"shard_size": 2000, "row_group_size": 600, "progress": False}


def rows(tag: str, n: int = 60) -> list[tuple[str, dict[str, object]]]:
    return [(f"{tag}{i:04d}", {"x": i, "s": f"{tag}-{i}" * 5}) for i in range(n)]


@pytest.fixture(params=["local", "s3"])
def gc_repo(request: pytest.FixtureRequest, cache_dir: str) -> Repository:
    root = request.getfixturevalue(f"{request.param}_root")
    return Repository.open(root, cache_dir=cache_dir)


def stored_shards(repo: Repository) -> dict[str, int]:
    return {o.path: o.size for o in repo.storage.list("shards/")}


def test_gc_after_rm_reclaims_exactly_the_unreferenced_shards(gc_repo: Repository) -> None:
    repo = gc_repo
    v1 = repo.commit("d", rows("a"), **SMALL)
    v2 = repo.commit("d", rows("b"), **SMALL)
    old = set(shard_paths(repo, "d", v1.version))
    keep = set(shard_paths(repo, "d", v2.version))
    assert old and keep and not old & keep
    sizes = stored_shards(repo)
    assert repo.rm("d", v1.version) == [v1.version]

    report = repo.gc(grace=0)
    assert not report.dry_run
    assert {shard_path(d) for d in report.deleted} == old
    assert report.bytes_reclaimed == sum(sizes[p] for p in old)
    assert report.kept_referenced == len(keep)
    assert set(stored_shards(repo)) == keep
    # Nothing left to collect, and the surviving version is intact.
    again = repo.gc(grace=0)
    assert again.deleted == [] and again.bytes_reclaimed == 0
    assert repo.dataset("d").version == v2.version


def test_gc_keeps_shards_another_dataset_references(gc_repo: Repository) -> None:
    repo = gc_repo
    v = repo.commit("first", rows("a"), **SMALL)
    other = repo.commit("second", rows("a"), **SMALL)
    assert other.shards_uploaded == 0  # same bytes: shared shards
    repo.rm("first")
    assert repo.datasets() == ["second"]
    report = repo.gc(grace=0)
    assert report.deleted == []
    assert all(repo.storage.exists(p) for p in shard_paths(repo, "second", other.version))
    assert set(shard_paths(repo, "second")) == {shard_path(d) for d in v.manifest.digests()}


def test_gc_keeps_a_fresh_unreferenced_shard_inside_the_grace_period(
    gc_repo: Repository,
) -> None:
    repo = gc_repo
    repo.commit("d", rows("a"), **SMALL)
    data = b"PAR1 an upload whose manifest is not stored yet PAR1"
    orphan = shard_path(hashlib.sha256(data).hexdigest())
    repo.storage.write(orphan, data)

    report = repo.gc(grace="1h")
    assert report.deleted == [] and report.kept_young == 1
    assert repo.storage.exists(orphan)

    report = repo.gc(grace=0)
    assert [shard_path(d) for d in report.deleted] == [orphan]
    assert report.bytes_reclaimed == len(data)
    assert not repo.storage.exists(orphan)


def test_dry_run_deletes_nothing_but_reports_what_it_would(gc_repo: Repository) -> None:
    repo = gc_repo
    v1 = repo.commit("d", rows("a"), **SMALL)
    repo.commit("d", rows("b"), **SMALL)
    repo.rm("d", v1.version)
    before = stored_shards(repo)
    dry = repo.gc(grace=0, dry_run=True)
    assert dry.dry_run and dry.deleted and dry.bytes_reclaimed > 0
    assert stored_shards(repo) == before
    real = repo.gc(grace=0)
    assert sorted(real.deleted) == sorted(dry.deleted)
    assert real.bytes_reclaimed == dry.bytes_reclaimed


def test_gc_keeps_the_key_index_of_a_live_version(repo: Repository) -> None:
    v = repo.commit("unsorted", [("b", {"x": 1}), ("a", {"x": 2})], progress=False)
    index = v.manifest.key_index
    assert index is not None
    repo.gc(grace=0)
    assert repo.storage.exists(shard_path(index["digest"]))
    repo.rm("unsorted")
    report = repo.gc(grace=0)
    assert index["digest"] in report.deleted


def test_rm_of_latest_moves_latest_back_to_the_previous_version(
    gc_repo: Repository,
) -> None:
    repo = gc_repo
    v1 = repo.commit("d", rows("a", 10), progress=False)
    v2 = repo.commit("d", rows("b", 10), progress=False)
    repo.tag("d", v2.version, "best")
    assert repo.dataset("d").version == v2.version
    repo.rm("d", v2.version[:10])
    assert repo.refs("d") == {"latest": v1.version}  # the tag on v2 went with it
    assert repo.dataset("d").version == v1.version
    assert [v.version for v in repo.versions("d")] == [v1.version]
    assert [e.action for e in repo.log("d") if e.ref == "latest"][-1] == "rm"
    with pytest.raises(NotFoundError):
        repo.dataset("d", v2.version)


def test_rm_of_an_older_version_keeps_latest(repo: Repository) -> None:
    v1 = repo.commit("d", rows("a", 10), progress=False)
    v2 = repo.commit("d", rows("b", 10), progress=False)
    repo.rm("d", v1.version)
    assert repo.refs("d") == {"latest": v2.version}


def test_rm_of_the_whole_dataset_and_of_unknown_names(repo: Repository) -> None:
    repo.commit("d", rows("a", 10), progress=False)
    repo.commit("keep", rows("k", 10), progress=False)
    removed = repo.rm("d")
    assert len(removed) == 1
    assert repo.datasets() == ["keep"]
    gone = [e for e in repo.log("d") if e.ref == "latest"]  # the removal stays on record
    assert [e.action for e in gone] == ["commit", "delete"] and gone[-1].version is None
    again = repo.commit("d", rows("c", 10), progress=False)  # the name can be used again
    assert repo.dataset("d").version == again.version
    assert [e.seq for e in repo.log("d") if e.ref == "latest"] == [1, 2, 3]
    repo.rm("d")
    with pytest.raises(NotFoundError, match="'d'"):
        repo.rm("d")
    with pytest.raises(NotFoundError):
        repo.dataset("d")


def test_gc_stops_on_a_corrupt_manifest_and_deletes_nothing(repo: Repository) -> None:
    from dload_arrow import IntegrityError

    v1 = repo.commit("d", rows("a"), **SMALL)
    v2 = repo.commit("d", rows("b"), **SMALL)
    repo.rm("d", v1.version)
    before = stored_shards(repo)
    path = f"datasets/d/manifests/{v2.version}.arrow"
    repo.storage.write(path, repo.storage.read(path)[:-1] + b"\x00")
    with pytest.raises(IntegrityError):
        repo.gc(grace=0)
    assert stored_shards(repo) == before


def test_gc_removes_stale_temp_files_of_crashed_writes_on_local_roots(repo: Repository) -> None:
    import os
    from pathlib import Path

    repo.commit("d", rows("a", 10), progress=False)
    shards = Path(str(repo.storage.local_path("shards")))
    stale = shards / "ab" / f"{'ab' * 32}.parquet.tmp-0123"
    fresh = shards / "cd" / f"{'cd' * 32}.parquet.tmp-4567"
    for p in (stale, fresh):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"partial write")
    os.utime(stale, (0, 0))
    dry = repo.gc(grace="1h", dry_run=True)
    assert dry.temp_files_removed == 1 and stale.exists()
    report = repo.gc(grace="1h")
    assert report.temp_files_removed == 1 and report.temp_bytes_reclaimed == 13
    assert report.deleted == []  # temp files are not shards
    assert not stale.exists() and fresh.exists()


def _age(repo: Repository, path: str, seconds: float) -> None:
    """Make a local shard look ``seconds`` old (what a removed version's shards are)."""
    import os
    import time

    full = repo.storage.local_path(path)
    assert full is not None
    t = time.time() - seconds
    os.utime(full, (t, t))


def test_a_commit_reusing_an_old_unreferenced_shard_restarts_its_grace(
        repo: Repository) -> None:
    # rm leaves the shards of a removed version old and unreferenced; a commit of the same
    # bytes reuses them without uploading. It must touch them, or a gc run next to it (grace
    # 1h) would delete shards the new version references.
    v1 = repo.commit("d", rows("a"), **SMALL)
    paths = shard_paths(repo, "d", v1.version)
    repo.rm("d")
    for p in paths:
        _age(repo, p, 7200)
    v2 = repo.commit("e", rows("a"), **SMALL)
    assert v2.shards_uploaded == 0  # reused, not uploaded
    report = repo.gc(grace="1h")
    assert report.deleted == []
    assert all(repo.storage.exists(p) for p in paths)
    assert [r["x"] for r in repo.dataset("e").samples()] == list(range(60))


class _TouchAfterListing:
    """The real local storage; a commit touches ``path`` right after gc's listing."""

    def __init__(self, storage: Any, path: str) -> None:
        self._s, self._path = storage, path

    def list(self, prefix: str) -> Any:
        out = self._s.list(prefix)
        self._s.touch(self._path)  # a commit reusing it runs now, between listing and delete
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


def test_gc_stats_a_shard_again_before_deleting_it(repo: Repository) -> None:
    from dload_arrow.repository.gc import collect_garbage

    v1 = repo.commit("d", rows("a"), **SMALL)
    paths = shard_paths(repo, "d", v1.version)
    repo.rm("d")
    for p in paths:
        _age(repo, p, 7200)
    report = collect_garbage(_TouchAfterListing(repo.storage, paths[0]), grace=3600)
    assert repo.storage.exists(paths[0])  # young again by the time gc came to delete it
    assert report.kept_young == 1
    assert sorted(shard_path(d) for d in report.deleted) == sorted(paths[1:])


class _GcDuringManifest:
    """The real local storage; a gc deletes ``path`` while the commit stores its manifest."""

    def __init__(self, storage: Any, path: str) -> None:
        self._s, self._path = storage, path

    def put_if_absent(self, path: str, data: bytes) -> bool:
        if "/manifests/" in path:
            self._s.delete(self._path)
        return bool(self._s.put_if_absent(path, data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


def test_a_commit_whose_reused_shard_is_deleted_meanwhile_publishes_nothing(
        repo: Repository) -> None:
    from dload_arrow import ConflictError
    from dload_arrow.store.commit import commit_samples

    v1 = repo.commit("d", rows("a"), **SMALL)
    paths = shard_paths(repo, "d", v1.version)
    storage = _GcDuringManifest(repo.storage, paths[0])
    with pytest.raises(ConflictError, match="deleted while it ran"):
        commit_samples(storage, "e", rows("a"), **SMALL)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        repo.dataset("e")  # the ref never moved: no version of "e" was published
    # (QA crash55) nor is its manifest left stored, to be listed and fail every read
    assert not list(repo.storage.list("datasets/e/manifests/"))
    assert repo.datasets() == ["d"]  # its stored manifest does not make "e" a dataset
    again = repo.commit("e", rows("a"), **SMALL)  # retrying uploads the missing shard
    assert again.shards_uploaded == 1
    assert [r["x"] for r in repo.dataset("e").samples()] == list(range(60))
    assert repo.datasets() == ["d", "e"]


class _GcWithNoGraceBeforeManifest:
    """The real local storage; a gc with no grace runs just before the manifest is stored,
    as one would in the middle of a commit that took longer than gc's grace period."""

    def __init__(self, storage: Any) -> None:
        self._s = storage

    def put_if_absent(self, path: str, data: bytes) -> bool:
        from dload_arrow.repository.gc import collect_garbage

        if "/manifests/" in path:
            assert collect_garbage(self._s, grace=0).deleted  # this commit's own shards
        return bool(self._s.put_if_absent(path, data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


def test_a_gc_with_a_grace_shorter_than_a_commit_cannot_publish_a_broken_version(
        repo: Repository) -> None:
    from dload_arrow import ConflictError
    from dload_arrow.store.commit import commit_samples

    storage = _GcWithNoGraceBeforeManifest(repo.storage)
    with pytest.raises(ConflictError, match=r"\d+ uploaded by it"):
        commit_samples(storage, "d", rows("k"), **SMALL)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        repo.dataset("d")  # nothing was published
    again = repo.commit("d", rows("k"), **SMALL)
    assert again.shards_uploaded == again.shards_total
    assert [r["x"] for r in repo.dataset("d").samples()] == list(range(60))
    # (QA crash55) a refused commit onto a dataset with versions leaves none listed that
    # would fail to read
    with pytest.raises(ConflictError, match=r"\d+ uploaded by it"):
        commit_samples(storage, "d", rows("m"), **SMALL)  # type: ignore[arg-type]
    assert [v.version for v in repo.versions("d")] == [again.version]
    assert repo.dataset("d").version == again.version


def test_a_damaged_stored_shard_is_replaced_by_committing_again(repo: Repository) -> None:
    v1 = repo.commit("d", rows("a"), **SMALL)
    path = shard_paths(repo, "d", v1.version)[0]
    full = repo.storage.local_path(path)
    assert full is not None
    open(full, "wb").close()  # a write cut off by a power loss
    again = repo.commit("d", rows("a"), **SMALL)
    assert again.version == v1.version and again.shards_uploaded == 1
    assert [r["x"] for r in repo.dataset("d").samples()] == list(range(60))


def test_a_reader_of_a_dataset_removed_and_collected_is_told_so(gc_repo: Repository) -> None:
    gc_repo.commit("gone", rows("g"), **SMALL)
    held = gc_repo.dataset("gone")
    gc_repo.rm("gone")
    gc_repo.gc(grace=0)
    with pytest.raises(NotFoundError, match=r"is gone from .*'gone' was removed \(rm\) and gc"):
        list(held.samples())
    gc_repo.commit("kept", rows("k"), **SMALL)
    kept = gc_repo.dataset("kept")
    for path in stored_shards(gc_repo):
        gc_repo.storage.delete(path)
    with pytest.raises(NotFoundError, match=r"'kept.*' is missing under .*dload verify kept"):
        list(kept.samples())


def test_a_lookup_of_a_deleted_remote_shard_names_the_shard_and_the_fix(
        memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir)
    repo.commit("d", rows("d"), **SMALL)
    ds = repo.dataset("d")
    for path in stored_shards(repo):
        repo.storage.delete(path)
    for lookup in (lambda: ds[3], lambda: ds.get("d0003"), lambda: ds.head(2)):
        with pytest.raises(NotFoundError, match=r"shard \w+ of dataset 'd' is missing.*verify d"):
            lookup()


class _SameCommitPublishesMeanwhile:
    """The real local storage; the commit's check finds a shard gone (a gc deleted it), and
    just then a second commit of the same samples uploads it again and publishes the version."""

    def __init__(self, storage: Any, repo: Repository, path: str) -> None:
        self._s, self._repo, self._path, self.published = storage, repo, path, ""

    def put_if_absent(self, path: str, data: bytes) -> bool:
        if "/manifests/" in path and not self.published:
            self._s.delete(self._path)  # the gc, once
        return bool(self._s.put_if_absent(path, data))

    def exists(self, path: str) -> bool:
        found = bool(self._s.exists(path))
        if path == self._path and not found and not self.published:
            self.published = self._repo.commit("e", rows("a"), **SMALL).version
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._s, name)


def test_a_refused_commit_keeps_the_manifest_a_concurrent_commit_published(
        repo: Repository) -> None:
    """(review55) the refused commit deleted its manifest after the other commit of the same
    samples had moved latest to it: latest named a missing version."""
    from dload_arrow import ConflictError
    from dload_arrow.store.commit import commit_samples

    v1 = repo.commit("d", rows("a"), **SMALL)
    storage = _SameCommitPublishesMeanwhile(repo.storage, repo, shard_paths(repo, "d",
                                                                            v1.version)[0])
    with pytest.raises(ConflictError, match="deleted while it ran"):
        commit_samples(storage, "e", rows("a"), **SMALL)  # type: ignore[arg-type]
    assert storage.published and repo.dataset("e").version == storage.published
    assert [r["x"] for r in repo.dataset("e").samples()] == list(range(60))
