"""QA perms66, a root shared by several Unix users: the local root's listing skipped a folder
it could not read (another user's private dataset, umask 077), so `gc` deleted that dataset's
shards and `ls` hid it. A folder the walk cannot read is refused by name.

The suite runs as root, whom permissions do not stop: the walk's error is given as the OS
gives it (a PermissionError naming the folder), which is what os.walk passes on."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.storage.local import LocalStorage


def test_a_folder_the_listing_cannot_read_is_refused_not_skipped(tmp_path: Path) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("priv", [("k", {"x": 1})])
    storage = repo.storage
    assert isinstance(storage, LocalStorage)
    private = tmp_path / "r" / "datasets" / "priv"
    e = PermissionError(errno.EACCES, "Permission denied", str(private))
    with pytest.raises(dl.StorageError, match=r"cannot list 'datasets/priv' in root .* "
                       r"\(Permission denied\): .*gc would delete shards it keeps.*chmod"):
        storage._unlisted(e)
    storage._unlisted(FileNotFoundError(errno.ENOENT, "gone", str(private)))  # empty: fine
    assert [o.path for o in storage.list("datasets/none/")] == []
    assert storage.list("datasets/priv/refs/")


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
