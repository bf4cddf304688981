"""The cache's listing racing downloads that finish (rename temp -> final) outside cache.lock.

Each test forces one interleaving by running the downloader's last step from inside the scan
(a hook on the listing or on the lock probe), so the race is hit every time, not by chance.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dload_arrow.read.cache_space as cache_mod
import dload_arrow.read.stale_temps as stale_temps
from dload_arrow.read.cache import Cache
from dload_arrow.read.locks import FileLock


def _temp_file(cache_dir: str, digest: str, size: int = 3000) -> tuple[Cache, str, str]:
    """A cache with one download's temp file of ``size`` bytes (reserving 3000): the cache,
    the shard's final path and the temp path."""
    cache = Cache(cache_dir, 10_000)
    final = cache.shard_file(digest)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = f"{final}.tmp-3000-race"
    Path(tmp).write_bytes(b"x" * size)
    return cache, final, tmp


def test_a_download_renamed_while_the_cache_is_listed_is_still_counted(
        cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Downloads rename temp -> final outside cache.lock. An admission whose directory listing
    # was taken just before such a rename sees a temp name that no longer exists and no final
    # name: the shard must still count against the budget (invariant 4), exactly once.
    digest = "cd" * 32
    cache, final, tmp = _temp_file(cache_dir, digest)
    real = cache_mod.list_dir

    def listing_then_rename(path: str) -> list[os.DirEntry[str]]:
        entries = real(path)
        if os.path.exists(tmp) and path == os.path.dirname(final):
            os.replace(tmp, final)  # the downloader finishes between readdir and stat
        return entries

    monkeypatch.setattr(cache_mod, "list_dir", listing_then_rename)
    used, entries = cache._scan(cleanup=True)
    assert used == 3000
    assert [(d, n) for _, d, n in entries] == [(digest, 3000)]
    monkeypatch.setattr(cache_mod, "list_dir", real)
    assert cache.used_bytes() == 3000  # and once, when the listing sees the final name


def test_a_download_finishing_between_stat_and_stale_check_is_still_counted(
        cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The scan stats a temp file (the whole shard has arrived), then asks whether it is stale
    # by trying its download lock. If the downloader renames it to the final name and releases
    # the lock in between, the lock is free but the temp is not stale: it became the final
    # file, which this listing (taken before the rename) does not show. It must still count:
    # a scan that dropped it let a third shard into a two-shard budget (a flaky CI failure).
    digest = "cd" * 32
    cache, final, tmp = _temp_file(cache_dir, digest)
    download_lock = FileLock.acquire(cache._lock_file(digest), exclusive=True)
    real = stale_temps.try_exclusive

    def finish_then_probe(path: str) -> FileLock | None:
        if os.path.exists(tmp):
            os.replace(tmp, final)  # the downloader's last steps: rename, release its lock
            download_lock.release()
        return real(path)

    monkeypatch.setattr(stale_temps, "try_exclusive", finish_then_probe)
    used, entries = cache._scan(cleanup=True)
    assert used == 3000
    assert [(d, n) for _, d, n in entries] == [(digest, 3000)]
    assert os.path.getsize(final) == 3000  # not mistaken for a dead download's leftovers


def test_a_dead_downloads_temp_file_is_still_removed_by_the_scan(cache_dir: str) -> None:
    cache, final, tmp = _temp_file(cache_dir, "ef" * 32, size=1000)  # nobody holds its lock
    assert cache._scan(cleanup=True) == (0, [])
    assert not os.path.exists(tmp) and not os.path.exists(final)


def test_status_tells_a_dead_download_from_a_live_one(memory_root: str, cache_dir: str) -> None:
    """QA sharedcache63: a reader killed mid-download left a temp file that `cache status`
    showed as being downloaded (and its whole reservation as used) until a reader ran."""
    from dload_arrow import Repository

    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="10KB")
    cache, _final, _tmp = _temp_file(cache_dir, "ef" * 32, size=1000)  # nobody holds its lock
    status = repo.cache_status()
    assert status.downloading_bytes == 0 and status.used_bytes == 1000
    live = FileLock.acquire(cache._lock_file("ab" * 32), exclusive=True)
    try:
        cache, _final, _tmp = _temp_file(cache_dir, "ab" * 32, size=1000)
        status = repo.cache_status()
        assert status.downloading_bytes == 3000 and status.used_bytes == 1000 + 3000
    finally:
        live.release()
