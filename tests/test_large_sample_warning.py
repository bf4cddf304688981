"""A sample too large for this machine's memory is warned of before any byte is read.

Committing one value costs about five times its size at the peak (its Arrow copy, Parquet's
encoded page and zstd output, the shard buffer: 1.0 GB for a 200 MB file); a multi-GB video
on a small box was killed partway with no message. The check uses the listed sizes, so it
costs nothing, and ``DLOAD_MEMORY_LIMIT`` sets the memory it assumes.
"""

from __future__ import annotations

import tarfile
import warnings
from pathlib import Path

import pytest
from test_cli import dload

from dload_arrow.ingest import open_source
from dload_arrow.ingest.grouping import COMMIT_MEMORY_FACTOR, LargeSampleWarning


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "clips").mkdir(parents=True)
    (src / "clips" / "big.mp4").write_bytes(b"\x01" * 3_000_000)
    (src / "clips" / "big.json").write_bytes(b"{}" * 500_000)  # the same sample: 4 MB in all
    (src / "small.txt").write_bytes(b"x" * 2_000_000)
    return src


def _warned(source: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        open_source(source).keys()
    return [str(w.message) for w in got if issubclass(w.category, LargeSampleWarning)]


def test_the_largest_sample_is_named_with_what_it_needs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _folder(tmp_path)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "15MB")  # under 5 x 4 MB
    assert COMMIT_MEMORY_FACTOR == 5
    assert _warned(src) == [
        f"{src}: sample 'clips/big' holds 4.0 MB (largest file 'clips/big.mp4', 3.0 MB); "
        "committing it needs about 20.0 MB of memory (5x, one value is encoded whole) and this "
        "process has 15.0 MB available, so the commit may be killed for lack of memory "
        "(nothing is published then); commit on a machine with more memory, split the file, or "
        "leave it out with --exclude (exclude=[...] in Python); DLOAD_MEMORY_LIMIT sets the "
        "memory this check assumes"]
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "20MB")  # enough: no warning
    assert _warned(src) == []
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "unlimited")
    assert _warned(src) == []


def test_archives_are_checked_from_their_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _folder(tmp_path)
    tar = tmp_path / "clips.tar"
    with tarfile.open(tar, "w") as t:
        t.add(src, arcname=".")
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "15MB")
    said = _warned(tar)
    assert len(said) == 1 and "sample 'clips/big' holds 4.0 MB" in said[0], said


def test_the_cli_warns_and_still_commits(
        tmp_path: Path, local_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _folder(tmp_path)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "12MB")
    r = dload("commit", "clips", "--from", str(src), "--root", local_root, cwd=tmp_path)
    assert "warning: " in r.err and "sample 'clips/big' holds 4.0 MB" in r.err, r.err
    assert "2 rows" in r.out  # a warning, not a refusal: the estimate may be pessimistic
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1GB")
    r = dload("commit", "clips2", "--from", str(src), "--root", local_root, cwd=tmp_path)
    assert "holds" not in r.err, r.err
