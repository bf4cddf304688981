"""QA security64: hostile input. A folder's file replaced, after the listing, by a symbolic
link (to a file outside the folder) or a FIFO was read through the link, or blocked the
commit forever; both are refused as a folder that changed during the commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.ingest import open_source


@pytest.mark.parametrize("swap", ["symlink", "fifo"])
def test_a_file_swapped_after_the_listing_is_refused(tmp_path: Path, local_root: str,
                                                     swap: str) -> None:
    folder = tmp_path / "upload"
    folder.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"SECRET!!")
    for i in range(3):
        (folder / f"f{i}.bin").write_bytes(bytes(8))
    src = open_source(str(folder))
    assert src.report.samples == 3  # listed: three regular files of 8 bytes
    os.remove(folder / "f2.bin")
    if swap == "symlink":
        os.symlink(secret, folder / "f2.bin")
    else:
        os.mkfifo(folder / "f2.bin")
    repo = dl.Repository.open(local_root)
    now = "a symbolic link" if swap == "symlink" else "not a regular file"
    with pytest.raises(dl.ConflictError, match=f"was a file when listed and is now {now}"):
        repo.commit("up", src)  # (a FIFO: refused at once, not a commit waiting forever)
    assert repo.datasets() == []


def test_a_shard_swapped_for_another_of_the_same_rows_is_refused(local_root: str) -> None:
    """A local root's shard file overwritten with another shard of the same row counts (its
    pages pass their CRCs) was read as that shard's rows by every read path; its size is not
    the manifest's."""
    import shutil

    from dload_arrow.store.names import shard_path

    repo = dl.Repository.open(local_root)
    repo.commit("a", [(f"k{i:04d}", {"x": 1, "s": f"A{i}" * 3}) for i in range(200)])
    repo.commit("b", [(f"k{i:04d}", {"x": 2, "s": f"B{i}" * 3}) for i in range(200)])
    (sa,), (sb,) = (repo.dataset(n).manifest.shards for n in ("a", "b"))
    path_a = os.path.join(local_root, shard_path(sa.digest))
    shutil.copyfile(os.path.join(local_root, shard_path(sb.digest)), path_a)
    assert os.path.getsize(path_a) != sa.bytes  # (the test's premise)
    ds = dl.Repository.open(local_root).dataset("a")
    for read in (lambda: list(ds), lambda: ds[0], lambda: ds.get("k0007"), ds.to_arrow):
        with pytest.raises(dl.IntegrityError, match=r"it holds [\d,]+ bytes, where the manifest"):
            read()
