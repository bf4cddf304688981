"""The cache lists a shards/<aa> folder again only when it changed (read/cache_scan.py): an
admission per downloaded shard made pulls quadratic in the shard count (QA 8)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dload_arrow.read import cache_space
from dload_arrow.read.cache_space import CacheSpace


def _shard(folder: Path, i: int, size: int = 10) -> None:
    digest = f"{folder.name}{i:062x}"
    (folder / f"{digest}.parquet").write_bytes(b"x" * size)


def _settle(folder: Path) -> int:
    """Give ``folder`` an mtime a minute old (as if it last changed then); return it."""
    old = os.stat(folder).st_mtime_ns - 60 * 10**9
    os.utime(folder, ns=(old, old))
    return old


def test_an_unchanged_folder_is_not_listed_again_and_a_changed_one_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    space = CacheSpace(str(tmp_path))
    folders = [tmp_path / "shards" / f"{a:02x}" for a in range(4)]
    for f in folders:
        f.mkdir(parents=True)
        for i in range(3):
            _shard(f, i)
        _settle(f)
    listed: list[str] = []
    real = cache_space.list_dir
    monkeypatch.setattr(cache_space, "list_dir", lambda p: (listed.append(p), real(p))[1])
    assert space._scan_pending(cleanup=False)[0] == 4 * 3 * 10
    assert len(listed) == 5  # shards/ and its four folders
    listed.clear()
    assert space._scan_pending(cleanup=False)[0] == 120
    assert listed == [str(tmp_path / "shards")]  # nothing changed: no folder listed
    _shard(folders[1], 7, size=5)  # moves the folder's mtime
    listed.clear()
    used, _pending, entries = space._scan_pending(cleanup=False)
    assert used == 125 and listed == [str(tmp_path / "shards"), str(folders[1])]
    assert len(entries()) == 13


def test_a_folder_changed_just_before_its_listing_is_listed_again(tmp_path: Path) -> None:
    # A change within the filesystem's timestamp granularity may leave the mtime as it was:
    # a listing of a folder whose mtime is recent is not kept.
    space = CacheSpace(str(tmp_path))
    folder = tmp_path / "shards" / "ab"
    folder.mkdir(parents=True)
    _shard(folder, 0)
    st = os.stat(folder)
    assert space._scan_pending(cleanup=False)[0] == 10
    _shard(folder, 1)
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime: a "racy" change
    assert space._scan_pending(cleanup=False)[0] == 20


def test_a_folder_holding_a_download_in_progress_is_listed_each_time(tmp_path: Path) -> None:
    space = CacheSpace(str(tmp_path))
    folder = tmp_path / "shards" / "cd"
    folder.mkdir(parents=True)
    _shard(folder, 0)
    tmp = folder / f"cd{0:062x}.parquet.tmp-100-abc"
    tmp.write_bytes(b"y" * 40)
    settled = _settle(folder)
    used, pending, _ = space._scan_pending(cleanup=False)
    assert (used, pending) == (110, 60)  # the reservation counts whole, 60 bytes to come
    tmp.write_bytes(b"y" * 90)  # the download goes on: the folder's mtime does not move
    os.utime(folder, ns=(settled, settled))
    assert space._scan_pending(cleanup=False)[:2] == (110, 10)
