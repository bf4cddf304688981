"""gc deletes only dload_arrow's own shards under ``shards/``: a user's files there (a folder
of WebDataset tars is often called shards/) are reported and left alone; names holding
``.tmp-`` (a local root's temp files, hidden from its listings) are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dload_arrow import Repository
from dload_arrow.errors import InvalidNameError

FOREIGN = ["shards/train-000.tar", "shards/notes", "shards/ab/readme.parquet",
           f"shards/cd/{'ab' * 32}.parquet"]  # a digest in the wrong fan-out folder


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_gc_leaves_files_that_are_not_dload_shards(backend: str, cache_dir: str,
                                                   request: pytest.FixtureRequest) -> None:
    root = request.getfixturevalue(f"{backend}_root")
    repo = Repository.open(root, cache_dir=cache_dir)
    first = repo.commit("d", [("a", {"n": 1})], progress=False).version
    repo.commit("d", [("b", {"n": 2})], progress=False)
    repo.rm("d", first)  # its shard: garbage
    for path in FOREIGN:
        repo.storage.put_if_absent(path, b"user data")
    if backend == "local":
        for path in FOREIGN:
            os.utime(Path(root, path), (0, 0))
    before = {o.path for o in repo.storage.list("shards/")}
    report = repo.gc(grace=0)
    after = {o.path for o in repo.storage.list("shards/")}
    assert set(FOREIGN) <= after  # every user file is still there
    assert len(report.deleted) == 1 and len(before - after) == 1
    assert report.foreign_count == len(FOREIGN) and set(report.foreign) <= set(FOREIGN)
    assert repo.dataset("d").to_arrow().column("n").to_pylist() == [2]


def test_gc_cli_names_the_files_it_left(local_root: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = Repository.open(local_root, cache_dir=str(tmp_path / "c"))
    repo.commit("d", [("a", {"n": 1})], progress=False)
    user = Path(local_root, "shards", "train-000.tar")
    user.write_bytes(b"tar bytes")
    os.utime(user, (0, 0))
    temp_like = Path(local_root, "shards", "mine.tmp-1")  # not a dload temp file either
    temp_like.write_bytes(b"x")
    os.utime(temp_like, (0, 0))
    out = subprocess.run([sys.executable, "-m", "dload_arrow.cli", "gc", "--grace", "0",
                          "--root", local_root], capture_output=True, text=True, check=True).stdout
    assert "left 1 files under shards/ that are not dload shards" in out
    assert "shards/train-000.tar" in out
    assert user.read_bytes() == b"tar bytes" and temp_like.exists()


@pytest.mark.parametrize("name", ["best.tmp-1", "a.tmp-"])
def test_names_holding_the_temp_marker_are_refused(repo: Repository, name: str) -> None:
    v = repo.commit("d", [("a", {"n": 1})], progress=False).version
    with pytest.raises(InvalidNameError, match=r"'\.tmp-' is reserved"):
        repo.tag("d", v, name)
    with pytest.raises(InvalidNameError, match=r"'\.tmp-' is reserved"):
        repo.commit(name, [("a", {"n": 1})], progress=False)
