"""`dload verify` on a local root marks the shards whose bytes hash to their digest, so that
reads skip the page checks a local shard gets until it has been read whole once (a
benchmark's or a training job's first epoch after a verify pays no check)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from cli_run import runner

from dload_arrow import IntegrityError, Repository
from dload_arrow.read.verified import file_stamp


def _root(tmp_path: Path, n: int = 2) -> tuple[Path, Path, list[str]]:
    root, cache = tmp_path / "root", tmp_path / "cache"
    repo = Repository.open(root, cache_dir=cache)
    rnd = random.Random(0)  # incompressible: a flipped byte still decodes, only a check tells
    v = repo.commit("d", [(f"k{i:03d}", {"blob": rnd.randbytes(1000)}) for i in range(100)],
                    shard_size=f"{60 // n}KB", row_group_size="20KB", progress=False)
    digests = repo.manifest("d", v.version).digests()
    assert len(digests) >= n
    return root, cache, digests


def _shard(root: Path, digest: str) -> Path:
    return root / "shards" / digest[:2] / f"{digest}.parquet"


def test_verify_marks_every_local_shard_it_hashed(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    root, cache, digests = _root(tmp_path)
    run = runner(capsys, ["--root", str(root), "--cache-dir", str(cache)])
    run("verify", "d")
    for d in digests:
        marker = cache / "verified" / d[:2] / d
        assert marker.read_text() == file_stamp(str(_shard(root, d)))


def test_verify_marks_no_corrupt_shard(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    root, cache, digests = _root(tmp_path)
    bad = _shard(root, digests[0])
    data = bytearray(bad.read_bytes())
    data[len(data) // 3] ^= 0x01
    os.chmod(bad, 0o644)
    bad.write_bytes(bytes(data))
    run = runner(capsys, ["--root", str(root), "--cache-dir", str(cache)])
    assert "1 BAD" in run("verify", "d", rc=1).out
    assert not (cache / "verified" / digests[0][:2] / digests[0]).exists()
    assert (cache / "verified" / digests[1][:2] / digests[1]).exists()
    with pytest.raises(IntegrityError, match="is corrupt"):  # still checked by every read
        Repository.open(root, cache_dir=cache).dataset("d").to_arrow()


def test_verify_removes_the_mark_of_a_shard_gone_bad(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    """QA review58: bit rot after a whole read (the file and its stamp unchanged, its bytes
    not) left the marker, and reads went on skipping the check after verify found it."""
    root, cache, digests = _root(tmp_path)
    list(Repository.open(root, cache_dir=cache).dataset("d").samples())  # marks both
    path = _shard(root, digests[0])
    marker = cache / "verified" / digests[0][:2] / digests[0]
    assert marker.exists()
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x01
    os.chmod(path, 0o644)
    path.write_bytes(bytes(data))
    marker.write_text(file_stamp(str(path)) or "")  # as if the rot came after the mark
    run = runner(capsys, ["--root", str(root), "--cache-dir", str(cache)])
    assert "1 BAD" in run("verify", "d", rc=1).out
    assert not marker.exists()
    with pytest.raises(IntegrityError, match="is corrupt"):
        Repository.open(root, cache_dir=cache).dataset("d").to_arrow()


def test_two_roots_holding_one_shard_share_a_cache_dir(tmp_path: Path) -> None:
    """QA review58: one stamp a marker, so two roots with the same shard took turns
    overwriting it and every read checked the pages again."""
    cache = tmp_path / "cache"
    rows = [(f"k{i:03d}", {"n": i}) for i in range(50)]
    roots = [tmp_path / "a", tmp_path / "b"]
    digest = ""
    for r in roots:
        repo = Repository.open(r, cache_dir=cache)
        digest = repo.manifest("d", repo.commit("d", rows, progress=False).version).digests()[0]
        list(repo.dataset("d").samples())
    stamps = (cache / "verified" / digest[:2] / digest).read_text().split("\n")
    assert sorted(stamps) == sorted(file_stamp(str(_shard(r, digest))) for r in roots)
