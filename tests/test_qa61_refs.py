"""QA s3fault61: a ref move whose log entry could not be written (the endpoint went away just
after the store applied the move) is reported as published, and the same commit run again
records the move instead of leaving latest without a time for good."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.errors import StorageError
from dload_arrow.store.refs import read_log


def test_a_log_write_that_fails_after_the_move_says_it_is_published_and_a_rerun_logs_it(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    repo = dl.Repository.open(root)
    v1 = repo.commit("ds", [("a", {"x": 1})], progress=False).version
    log = root / "datasets" / "ds" / "log" / "latest"
    shutil.move(log, tmp_path / "aside")
    log.write_text("")  # a file where the log folder is: the entry cannot be written
    with pytest.raises(StorageError, match=r"ds:latest now points at \w{12} \(the commit is "
                                           r"published\), but the log entry"):
        repo.commit("ds", [("b", {"x": 2})], progress=False)
    os.remove(log)
    shutil.move(tmp_path / "aside", log)
    v2 = repo.dataset("ds").version
    assert v2 != v1
    assert [v.version for v in repo.versions("ds") if v.time is None] == [v2]  # unlogged
    again = repo.commit("ds", [("b", {"x": 2})], progress=False)  # at once: its writer may
    assert [v.version for v in repo.versions("ds") if v.time is None] == [v2]  # still log it
    ref = root / "datasets" / "ds" / "refs" / "latest"
    os.utime(ref, (ref.stat().st_atime - 120, ref.stat().st_mtime - 120))  # two minutes on
    again = repo.commit("ds", [("b", {"x": 2})], progress=False)  # the same commit: a no-op
    assert again.version == v2 and again.shards_uploaded == 0
    assert all(v.time is not None for v in repo.versions("ds"))
    entries = [(e.seq, e.version, e.previous) for e in read_log(repo.storage, "ds")]
    assert entries == [(1, v1, None), (2, v2, v1)]
    repo.commit("ds", [("b", {"x": 2})], progress=False)  # logged once, not again
    assert len(read_log(repo.storage, "ds")) == 2


def test_an_append_whose_log_failed_says_not_to_run_it_again(tmp_path: Path) -> None:
    root = tmp_path / "root"
    repo = dl.Repository.open(root)
    repo.commit("ds", [("a", {"x": 1})], progress=False)
    log = root / "datasets" / "ds" / "log" / "latest"
    shutil.move(log, tmp_path / "aside")
    log.write_text("")
    with pytest.raises(StorageError, match=r"the append is published.*do not run the append "
                                           "again"):
        repo.append("ds", [("b", {"x": 2})], progress=False)
    os.remove(log)
    shutil.move(tmp_path / "aside", log)
    assert repo.dataset("ds").num_rows == 2
