"""QA concurrency62: an append whose new shards a concurrent gc deleted is told to append
again (a commit would drop every earlier row from latest); a whole-dataset rm cut off after it
deleted the refs is told as half done, not as a commit that never published."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dload_arrow as dl
import dload_arrow.repository.remove as remove_mod
from dload_arrow.errors import ConflictError, NotFoundError


def test_an_append_whose_shards_a_gc_deleted_says_append_again(tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    repo = dl.Repository.open(root, cache_dir=tmp_path / "c1")
    repo.commit("ds", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    other = dl.Repository.open(root, cache_dir=tmp_path / "c2")  # another process's gc

    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        yield from ((f"n{i:04d}", {"x": i * 10**12 + 7919 * i}) for i in range(3000))
        time.sleep(0.5)  # the shards written so far are uploaded, no manifest lists them
        assert other.gc(grace="0s").deleted

    with pytest.raises(ConflictError, match=r"^append to 'ds': \d+ shard\(s\) of the new "
                                            r"version .* shorter than this append took\); "
                                            r"nothing was published .* Append again"):
        repo.append("ds", rows(), shard_size="4KB", row_group_size="1KB", progress=False)
    assert repo.dataset("ds").num_rows == 10


def test_an_rm_cut_off_after_the_refs_is_told_as_half_done(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("ds", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    repo.append("ds", [(f"m{i}", {"x": i}) for i in range(10)], progress=False)

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # Ctrl-C while rm touches the shards for readers (S3: copies)

    monkeypatch.setattr(remove_mod, "keep_for_readers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        repo.rm("ds")
    monkeypatch.undo()
    with pytest.raises(NotFoundError, match=r"'ds' under .* is half removed: an rm deleted its "
                                            r"latest .* run `dload rm ds --yes`"):
        repo.dataset("ds")
    repo.rm("ds")  # as advised: finished
    with pytest.raises(NotFoundError, match="was removed"):
        repo.dataset("ds")


def test_gc_removes_a_killed_writers_manifest_temp_files(tmp_path: Path) -> None:
    """QA killresume62: an append killed before publishing its manifest left
    ``manifests/<id>.arrow.tmp-<uuid>``; gc cleaned temp files under shards/ only."""
    import os
    import uuid

    root = tmp_path / "root"
    repo = dl.Repository.open(root, cache_dir=tmp_path / "cache")
    repo.commit("ds", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    manifests = root / "datasets" / "ds" / "manifests"
    old = manifests / f"{'a' * 64}.arrow.tmp-{uuid.uuid4().hex}"
    old.write_bytes(b"x" * 1000)
    young = manifests / f"{'b' * 64}.arrow.tmp-{uuid.uuid4().hex}"
    young.write_bytes(b"y")
    mine = manifests / "notes.tmp-mine"  # not dload's: stays
    mine.write_text("keep")
    for p in (old, mine):
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    report = repo.gc(grace="1h")
    assert (report.temp_files_removed, report.temp_bytes_reclaimed) == (1, 1000)
    assert not old.exists() and young.exists() and mine.exists()
    assert repo.dataset("ds").num_rows == 10
