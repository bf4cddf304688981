"""QA perms66, a root shared by several Unix users: the local root's listing skipped a folder
it could not read (another user's private dataset, umask 077), so `gc` deleted that dataset's
shards and `ls` hid it. Such a folder is warned of by name, and gc refuses to run.

The suite runs as root, whom permissions do not stop: the walk's error is given as the OS
gives it (a PermissionError naming the folder), which is what os.walk passes on."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.storage.local import LocalStorage


def test_a_folder_the_listing_cannot_read_is_warned_of_and_stops_gc(tmp_path: Path) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("priv", [("k", {"x": 1})])
    repo.commit("pub", [("k", {"x": 2})])
    storage = repo.storage
    assert isinstance(storage, LocalStorage)
    private = tmp_path / "r" / "datasets" / "priv"
    storage._unlisted(FileNotFoundError(errno.ENOENT, "gone", str(private)))  # empty: fine
    assert storage.unreadable() == ()
    with pytest.warns(UserWarning, match=r"'datasets/priv' in root .* cannot be read by this "
                      r"user \(Permission denied\): what it holds is left out.*chmod"):
        storage._unlisted(PermissionError(errno.EACCES, "Permission denied", str(private)))
    assert storage.unreadable() == ("datasets/priv",)
    assert repo.dataset("pub").num_rows == 1  # (other users' work goes on: QA review66c)
    with pytest.raises(dl.StorageError, match=r"gc does not run: 'datasets/priv' .* cannot be "
                       r"read by this user"):
        repo.gc(grace=0)
    assert (tmp_path / "r" / "shards").exists() and len(list(
        (tmp_path / "r" / "shards").rglob("*.parquet"))) == 2


def test_a_root_moved_under_a_reader_is_said_so(tmp_path: Path) -> None:
    """QA perms66 4: a root moved (`mv`) while a job read it was told as "'big' was removed
    (rm) and gc collected its shards" (nobody ran either)."""
    repo = dl.Repository.open(str(tmp_path / "old"), cache_dir=str(tmp_path / "c"))
    import os

    repo.commit("big", [(f"k{i:04d}", {"x": os.urandom(1000)}) for i in range(400)],
                shard_size="64KB", row_group_size="16KB")
    assert len(repo.dataset("big").manifest.table) > 2
    batches = iter(repo.dataset("big").batches())
    next(batches)
    (tmp_path / "old").rename(tmp_path / "new")
    with pytest.raises(dl.NotFoundError, match=r"the root .*old no longer exists \(moved or "
                       "deleted while this reader read it\\); point the root at its new path"):
        for _ in batches:
            pass
    assert dl.Repository.open(str(tmp_path / "new"), cache_dir=str(tmp_path / "c")).dataset(
        "big").num_rows == 400


def test_a_local_ref_write_that_fails_says_it_did_not_move(tmp_path: Path) -> None:
    """QA perms66 5: a local root that refused a ref write (no permission, read-only, full)
    was told as "whether d:v1 moved ... is unknown (the store did not answer)"."""
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    v = repo.commit("d", [("k", {"x": 1})])
    (tmp_path / "r" / ".locks").rename(tmp_path / "locks.bak")
    (tmp_path / "r" / ".locks").write_text("not a folder")  # (as root, no permission stops)
    with pytest.raises(dl.StorageError, match=r"d:v1 did not move") as e:
        repo.tag("d", v.version, "v1")
    assert "unknown" not in str(e.value)
