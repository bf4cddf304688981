"""QA round 45 (repository lifecycle): a lost or damaged ``latest`` ref, multipart uploads a
killed commit left open on S3, a stalled endpoint's timeout not swallowed by a commit."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
import s3fs

from dload_arrow import IntegrityError, NotFoundError, Repository
from dload_arrow.errors import InvalidNameError


def _two_versions(repo: Repository) -> tuple[str, str]:
    v1 = repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(30)], progress=False)
    v2 = repo.append("d", [(f"k{i:03d}", {"x": i}) for i in range(30, 40)], progress=False)
    return v1.version, v2.version


def test_a_lost_latest_ref_is_named_and_restored_not_called_unpublished(
        repo: Repository, local_root: str) -> None:
    v1, v2 = _two_versions(repo)
    os.remove(os.path.join(local_root, "datasets", "d", "refs", "latest"))
    with pytest.raises(NotFoundError) as e:
        repo.dataset("d")
    said = str(e.value)
    assert "has lost its latest ref (the object datasets/d/refs/latest is missing)" in said
    assert f"last pointed at {v2[:12]} (append" in said and "unpublished" not in said
    assert f"`dload tag d@{v2[:12]} latest`" in said and "dload rm" not in said
    with pytest.raises(InvalidNameError, match="only to restore a lost latest ref"):
        repo.tag("d", v1, "latest")  # not the version the log names
    assert repo.tag("d", v2[:12], "latest") == v2
    assert repo.dataset("d").version == v2 and repo.datasets() == ["d"]
    assert [(e.action, e.version) for e in repo.log("d")][-1] == ("restore", v2)
    with pytest.raises(InvalidNameError, match="managed by commits"):
        repo.tag("d", v2, "latest")  # there now: commits move it
    v3 = repo.append("d", [("z", {"x": 0})], progress=False)
    assert repo.dataset("d").num_rows == 41 and v3.version != v2


def test_a_damaged_ref_says_how_to_mend_it_and_leaves_other_queries_alone(
        repo: Repository, local_root: str) -> None:
    _, v2 = _two_versions(repo)
    repo.commit("other", [("a", {"y": 1})], progress=False)
    path = os.path.join(local_root, "datasets", "d", "refs", "latest")
    Path(path).write_bytes(Path(path).read_bytes()[:20])
    with pytest.raises(IntegrityError) as e:
        repo.dataset("d")
    assert f"datasets/d/refs/latest under file://{local_root}" in str(e.value)
    assert "delete it, then restore it with `dload tag d@VERSION latest`" in str(e.value)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert repo.sql("select count(*) as n from samples('other')").to_pylist() == [{"n": 1}]
    assert any("the catalog leaves out ref 'latest' of 'd'" in str(w.message) for w in seen)
    os.remove(path)
    assert repo.tag("d", v2, "latest") == v2 and repo.dataset("d").num_rows == 40


def test_gc_aborts_multipart_uploads_a_killed_commit_left(s3_repo: Repository, s3_root: str,
                                                          s3_server: object) -> None:
    s3_repo.commit("d", [("a", {"x": 1})], progress=False)
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": os.environ["DLOAD_ENDPOINT_URL"]},
                           skip_instance_cache=True)
    bucket, root = s3_root[len("s3://"):].split("/", 1)
    key = f"{root}/shards/ab/{'ab' * 32}.parquet"
    up = fs.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
    fs.call_s3("upload_part", Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=1,
               Body=b"x" * 1000)
    other = fs.call_s3("create_multipart_upload", Bucket=bucket, Key="elsewhere/file")
    # moto dates every upload 2010-11-10: a grace of 9,000 days (back to 2002) holds it young
    young = s3_repo.gc(grace="9000d")
    assert young.uploads_aborted == 0  # within the grace period: a commit may be running
    dry = s3_repo.gc(grace="0s", dry_run=True)
    assert (dry.uploads_aborted, dry.upload_bytes_reclaimed) == (1, 1000)
    done = s3_repo.gc(grace="0s")
    assert (done.uploads_aborted, done.upload_bytes_reclaimed) == (1, 1000)
    left = fs.call_s3("list_multipart_uploads", Bucket=bucket).get("Uploads", [])
    assert [u["UploadId"] for u in left] == [other["UploadId"]]  # not the root's: left alone
    assert s3_repo.dataset("d").num_rows == 1


def test_a_damaged_shard_reads_with_its_size_or_its_dataset_named(
        s3_repo: Repository, s3_root: str, repo: Repository, local_root: str) -> None:
    rows = [(f"k{i:04d}", {"x": i}) for i in range(300)]
    s3_repo.commit("d", rows, progress=False)
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": os.environ["DLOAD_ENDPOINT_URL"]},
                           skip_instance_cache=True)
    (key,) = fs.find(s3_root[len("s3://"):] + "/shards/")
    size = fs.size(key)
    fs.pipe_file(key, b"garbage" * 100)
    with pytest.raises(IntegrityError, match=f"it holds 700 bytes, where the manifest lists "
                                             f"{size:,}"):
        s3_repo.dataset("d").to_arrow()
    repo.commit("d", rows, progress=False)
    (path,) = Path(local_root, "shards").glob("*/*.parquet")
    path.write_bytes(b"garbage" * 100)
    with pytest.raises(IntegrityError, match=r"shard [0-9a-f]{12} of dataset 'd' under file://.* "
                                             r"is corrupt \(.*\): restore it from a copy, or run "
                                             r"`dload verify d --delete-bad`"):
        repo.sql("select count(*) from samples('d')")


def test_tagging_the_version_a_tag_holds_logs_no_move(repo: Repository) -> None:
    v1, v2 = _two_versions(repo)
    repo.tag("d", v1, "best")
    repo.tag("d", v1, "best")
    repo.tag("d", v2, "best")
    moves = [(e.version, e.previous) for e in repo.log("d") if e.ref == "best"]
    assert moves == [(v1, None), (v2, v1)]


def test_a_wait_for_room_says_how_much_this_process_holds(s3_root: str, cache_dir: str) -> None:
    import subprocess
    import sys
    import textwrap

    from dload_arrow import InfeasiblePlanError
    from dload_arrow.read.cache import Cache

    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    repo.commit("d", [(f"k{i:04d}", {"b": os.urandom(40)}) for i in range(300)],
                shard_size=3000, row_group_size=800, progress=False)
    a, b = repo.manifest("d").shards[:2]
    cache = Cache(cache_dir, max(a.bytes, b.bytes), wait_timeout=0.3)
    hold = cache.acquire(repo.storage, a.digest, a.bytes)  # as a live to_polars() frame
    with pytest.raises(InfeasiblePlanError, match="of them by this process: its to_polars"), \
            pytest.warns(UserWarning, match="of them by this process"):
        cache.acquire(repo.storage, b.digest, b.bytes)
    hold.release()
    holder = textwrap.dedent("""
        import sys, time
        from dload_arrow.read.cache import Cache
        from dload_arrow import Repository
        repo = Repository.open(sys.argv[1], cache_dir=sys.argv[2])
        s = repo.manifest("d").shards[0]
        h = Cache(sys.argv[2], "unlimited").acquire(repo.storage, s.digest, s.bytes)
        print("held", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", holder, s3_root, cache_dir],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(InfeasiblePlanError) as e, pytest.warns(UserWarning):
            cache.acquire(repo.storage, b.digest, b.bytes)
        assert "held by live readers and none" in str(e.value)  # another process's: not ours
        assert "by this process" not in str(e.value)
    finally:
        child.kill()
        child.wait()


def test_an_rm_cut_off_after_deleting_latest_is_half_removed_not_lost(
        repo: Repository, local_root: str) -> None:
    from dload_arrow.store.removals import record_removal

    v1, v2 = _two_versions(repo)
    for vid in (v1, v2):  # what rm writes first, before it deletes the ref and the manifests
        record_removal(repo.storage, "d", vid, repo.manifest("d", vid))
    os.remove(os.path.join(local_root, "datasets", "d", "refs", "latest"))  # then it stopped
    with pytest.raises(NotFoundError, match=r"is half removed: an rm deleted its latest ref "
                                            r"and stopped with 2 version\(s\) left .*; run "
                                            r"`dload rm d --yes`"):
        repo.dataset("d")


def test_ls_lists_the_other_datasets_beside_a_damaged_ref(repo: Repository,
                                                          local_root: str) -> None:
    from test_cli import dload

    _two_versions(repo)
    repo.commit("other", [("a", {"y": 1})], progress=False)
    path = Path(local_root, "datasets", "d", "refs", "latest")
    path.write_bytes(path.read_bytes()[:20])
    r = dload("ls", "--root", local_root, "--json", cwd=Path(local_root).parent)
    assert [(row["name"], row["rows"]) for row in r.json] == [("d", None), ("other", 1)]
    assert "warning: datasets/d/refs/latest under" in r.err
    assert ("select version from log where name = 'd' and ref = 'latest' order by seq desc "
            "limit 1" in r.err)


def test_listing_warns_of_a_dataset_whose_latest_ref_was_lost(repo: Repository,
                                                              local_root: str) -> None:
    _, v2 = _two_versions(repo)
    repo.commit("other", [("a", {"y": 1})], progress=False)
    os.remove(os.path.join(local_root, "datasets", "d", "refs", "latest"))
    with pytest.warns(UserWarning, match=r"'d' .* has lost its latest ref .*; until then it is "
                                         r"not listed"):
        assert repo.datasets() == ["other"]
    repo.tag("d", v2, "latest")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repo.datasets() == ["d", "other"]


def test_init_takes_a_file_url_cache_dir(tmp_path: Path) -> None:
    from test_cli import dload

    dload("init", "--project", "--cache-dir", f"file://{tmp_path}/cache", cwd=tmp_path)
    assert f'cache_dir = "file://{tmp_path}/cache"' in (tmp_path / "dload.toml").read_text()


def test_a_forked_child_holds_none_of_its_parents_locks(tmp_path: Path) -> None:
    from dload_arrow.errors import escaped
    from dload_arrow.read.locks import FileLock, held_here

    path = str(tmp_path / "hold")
    lock = FileLock.acquire(path, exclusive=False)
    assert held_here(path)
    pid = os.fork()
    if pid == 0:  # the child: its copy of the descriptor is not a hold of its own
        os._exit(0 if not held_here(path) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    lock.release()
    assert not held_here(path)
    assert escaped("a\u061cb") == "a\\u061cb"
