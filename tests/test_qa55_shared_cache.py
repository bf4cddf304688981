"""A cache shared by a team's group (QA readonly55): with umask 002 and a group-writable
folder, the second user was refused, since dload made its lock and hold files 0644 and its
cached manifests and catalog summaries 0600 whatever the umask. They follow the umask now, as
the cached shards did; and a refusal over another user's file says whose it is and the fix."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dload_arrow import Repository
from dload_arrow.read.context import cache_dir_error


@pytest.fixture
def umask_002() -> Iterator[None]:
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def test_cache_files_follow_the_umask(tmp_path: Path, umask_002: None) -> None:
    cache = tmp_path / "cache"
    repo = Repository.open("memory://team", cache_dir=cache)  # read through the cache
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(50)], progress=False)
    assert sum(1 for _ in repo.dataset("d").samples()) == 50
    repo.sql("select count(*) from versions")  # the catalog's summaries
    files = [p for p in cache.rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"]
    kinds = {p.relative_to(cache).parts[0] for p in files}
    assert {"cache.lock", "manifests", "shards"} <= kinds, kinds
    for p in files:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode & 0o660 == 0o660, f"{p.relative_to(cache)}: {oct(mode)}"


def test_a_refusal_over_another_users_file_says_whose_it_is(tmp_path: Path) -> None:
    theirs = tmp_path / "cache.lock"
    theirs.touch()
    os.chmod(theirs, 0o644)
    if os.geteuid() != 0:
        pytest.skip("needs to give the file to another user (chown)")
    os.chown(theirs, 4321, 4321)
    err = cache_dir_error(str(tmp_path), PermissionError(errno.EACCES, "Permission denied",
                                                         str(theirs)))
    assert f"Permission denied: {theirs} (made by uid 4321, mode -rw-r--r--: to share a cache " \
           "with a group, every user needs umask 002 and the folder group-writable" in str(err)


def test_rm_without_delete_permission_says_what_it_did_and_records_nothing_false(
        s3_repo: Repository, s3_server: Any) -> None:
    """(QA readonly55) credentials that may write but not delete: a whole-dataset rm wrote
    removal records first, so `log` showed the live latest as removed; a version's rm moved
    latest and then failed without saying so."""
    from dload_arrow import StorageError

    v1 = s3_repo.commit("d", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    v2 = s3_repo.append("d", [(f"k{i}", {"x": i}) for i in range(10, 20)], progress=False)
    s3_server.fail("DELETE", "/", 403, "AccessDenied", "Access Denied", times=1000)
    try:
        with pytest.raises(StorageError):
            s3_repo.rm("d")
        assert s3_repo.datasets() == ["d"]
        assert [e.action for e in s3_repo.log("d") if e.action == "rm"] == []
        assert s3_repo.dataset("d").version == v2.version
        with pytest.raises(StorageError, match=f"rm of 'd' version {v2.version[:12]} is half "
                                               f"done: .*latest -> {v1.version[:12]}.*run the "
                                               "rm again with credentials that may delete"):
            s3_repo.rm("d", v2.version)
    finally:
        s3_server.failing.clear()
    assert s3_repo.rm("d", v2.version) == [v2.version]  # finished by the same call again
    assert [v.version for v in s3_repo.versions("d")] == [v1.version]


def test_pin_refuses_a_read_only_lock_and_names_a_lock_it_cannot_write(
        repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(QA readonly55) a dload.lock made read-only (pins frozen) was replaced without a word,
    writable again; one that cannot be written gave a bare errno naming a temp file."""
    from dload_arrow import ConfigError

    v = repo.commit("d", [("a", {"x": 1})], progress=False).version
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    (frozen / "dload.lock").write_text("[datasets]\n")
    os.chmod(frozen / "dload.lock", 0o444)
    monkeypatch.chdir(frozen)
    with pytest.raises(ConfigError, match=r"dload.lock is read-only \(mode -r--r--r--\): its "
                                          r"pins are frozen; make it writable \(chmod u\+w\)"):
        repo.pin("d", v)
    assert (frozen / "dload.lock").read_text() == "[datasets]\n"
    odd = tmp_path / "odd"
    (odd / "dload.lock").mkdir(parents=True)  # where the lock would go: not a file
    monkeypatch.chdir(odd)
    with pytest.raises(ConfigError, match=r"dload\.lock is a directory, not a file; fix it or "
                                          r"delete it"):  # found as the lock: refused (cfg56)
        repo.pin("d", v)
    assert [p.name for p in odd.iterdir()] == ["dload.lock"]  # no temp file left


def test_verify_delete_bad_reports_first_when_deletes_are_refused(
        s3_repo: Repository, s3_root: str, s3_server: Any, tmp_path: Path) -> None:
    """(QA readonly55) a refused delete was all `verify --delete-bad` printed: no BAD list,
    no JSON, only the first object named."""
    import json

    import s3fs
    from test_cli import dload

    s3_repo.commit("d", [(f"k{i:03d}", {"x": i}) for i in range(300)], shard_size=2000,
                   row_group_size=600, progress=False)
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": os.environ["DLOAD_ENDPOINT_URL"]},
                           skip_instance_cache=True)
    keys = sorted(fs.find(s3_root[len("s3://"):] + "/shards/"))[:2]
    for key in keys:
        fs.pipe_file(key, b"garbage" * 10)
    s3_server.fail("DELETE", "/shards/", 403, "AccessDenied", "Access Denied", times=1000)
    try:
        r = dload("verify", "d", "--delete-bad", "--json", "--root", s3_root, cwd=tmp_path, rc=1)
    finally:
        s3_server.failing.clear()
    report = json.loads(r.out)
    assert len(report["bad"]) == 2 and not report["ok"]
    assert all("delete_error" in b and not b.get("deleted") for b in report["bad"])
    assert "2 corrupt object(s) could not be deleted" in r.err, r.err


def test_cache_status_of_an_unusable_cache_dir_says_so(tmp_path: Path, local_root: str) -> None:
    """(QA readonly55) it printed "0 B used of ? ...; 0 B free disk" with a disk 76 GB free."""
    from test_cli import dload

    afile = tmp_path / "afile"
    afile.write_text("x")
    r = dload("cache", "status", "--root", local_root, "--cache-dir", str(afile), cwd=tmp_path)
    assert r.out.startswith(f"cache: {afile}: cannot be used (cannot use the cache dir {afile}"), \
        r.out
    assert "free disk" not in r.out


def test_a_budget_under_one_shard_is_not_told_to_stream(tmp_path: Path) -> None:
    """(QA readonly55) pull and sql suggested streaming instead, which needs a shard resident
    too and failed the same way; with room for a shard, streaming is still the suggestion."""
    import random

    from dload_arrow import InfeasiblePlanError

    rng = random.Random(5)
    rows = [(f"k{i:04d}", {"b": rng.randbytes(100)}) for i in range(600)]
    tiny = Repository.open("memory://tiny55", cache_dir=tmp_path / "c1", cache_budget="10KB")
    tiny.commit("d", rows, shard_size=20_000, row_group_size=4_000, progress=False)
    with pytest.raises(InfeasiblePlanError) as e:
        tiny.pull("d", progress=False)
    assert "commit with a smaller shard_size (a stream, too, holds a shard)" in str(e.value)
    assert "without pulling" not in str(e.value)
    roomy = Repository.open("memory://tiny55", cache_dir=tmp_path / "c2", cache_budget="40KB")
    with pytest.raises(InfeasiblePlanError, match="read it without pulling: reading streams "
                                                  "through the cache window"):
        roomy.pull("d", progress=False)
    assert sum(1 for _ in roomy.dataset("d").samples()) == 600
