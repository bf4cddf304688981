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
