"""QA ingest61: messy folders from a shell (shards beside a stray file, files changing during
a commit, Windows' own files, links in a folder of archives, counts of one)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.errors import ConfigError, ConflictError
from dload_arrow.ingest import open_source
from dload_arrow.ingest.directory import DirectorySource


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _shards(folder: Path, n: int = 3, sub: str = "") -> None:
    (folder / sub).mkdir(parents=True, exist_ok=True)
    for s in range(n):
        with tarfile.open(folder / sub / f"shard-{s:06d}.tar", "w") as t:
            for i in range(2):
                for ext, data in (("jpg", b"\xff\xd8img"), ("txt", b"caption")):
                    ti = tarfile.TarInfo(f"{sub}{s:03d}{i:03d}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))


@pytest.mark.parametrize(("stray", "words"), [
    ("sha256sums.txt", "beside 1 other file ('sha256sums.txt')"),
    ("stats.json", "beside 1 other file ('stats.json')"),
    ("shard-000003.tar.part", "a download still running or cut off"),
])
def test_shards_beside_a_stray_file_are_refused_not_stored_whole(
        tmp_path: Path, run: RunFn, local_root: str, stray: str, words: str) -> None:
    _shards(tmp_path / "wds")
    assert "6 rows" in run("commit", "wds", "--from", str(tmp_path / "wds")).out
    (tmp_path / "wds" / stray).write_text("{}")
    err = run("commit", "wds", "--from", str(tmp_path / "wds"), rc=1).err
    assert "holds 3 archives" in err and words in err
    pattern = f"{tmp_path}/wds/*.tar"
    assert f"--from '{pattern}'" in err and "--as files" in err
    assert dl.Repository.open(local_root).dataset("wds").num_rows == 6  # latest untouched
    assert "6 rows" in run("commit", "wds", "--from", pattern).out  # the advice works
    with pytest.raises(ConfigError, match="holds 3 archives"):  # Python's auto too
        assert open_source(tmp_path / "wds").report
    files = run("commit", "blobs", "--from", str(tmp_path / "wds"), "--as", "files").out
    assert "4 rows" in files


def test_a_folder_of_documents_with_one_archive_is_still_files(tmp_path: Path,
                                                               run: RunFn) -> None:
    d = tmp_path / "docs"
    _shards(d, n=1)
    for name in ("a.pdf", "b.pdf"):
        (d / name).write_bytes(b"%PDF")
    assert "3 rows" in run("commit", "docs", "--from", str(d)).out


def test_archive_folder_refusals_name_patterns_that_cover_every_archive(
        tmp_path: Path, run: RunFn) -> None:
    flat = tmp_path / "flat"
    _shards(flat, n=2)
    (flat / "stats.json").write_text("{}")
    err = run("commit", "f", "--from", str(flat), "--exclude", "stats.json", rc=1).err
    assert "once --exclude leaves out its other files" in err and "in subfolders" not in err
    assert f"--from '{flat}/*.tar'" in err
    both = tmp_path / "both"
    _shards(both, n=1)
    _shards(both, n=1, sub="sub/")
    err = run("commit", "b", "--from", str(both), rc=1).err
    assert "in subfolders ('sub/shard-000000.tar'" in err
    assert f"--from '{both}/*.tar' --from '{both}/*/*.tar'" in err
    out = run("commit", "b", "--from", f"{both}/*.tar", "--from", f"{both}/*/*.tar").out
    assert "4 rows" in out


def test_a_file_rewritten_between_listing_and_reading_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "rd"
    (d / "s").mkdir(parents=True)
    (d / "s" / "a.jpg").write_bytes(b"A")
    (d / "s" / "b.jpg").write_bytes(b"B" * 8)
    src = DirectorySource(str(d))
    assert src.report.samples == 2  # listed: b.jpg has 8 bytes
    (d / "s" / "b.jpg").write_bytes(b"")  # a writer truncates it before it is read
    repo = dl.Repository.open(tmp_path / "root")
    with pytest.raises(ConflictError, match=r"b.jpg' was 8 bytes when listed and 0 when read"):
        repo.commit("race", src.reader(), progress=False)
    assert repo.datasets() == []


def test_windows_own_files_are_not_samples(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "win" / "cats"
    d.mkdir(parents=True)
    for i in range(3):
        (d / f"{i}.jpg").write_bytes(b"\xff\xd8" + bytes([i]))
    (d / "Thumbs.db").write_bytes(b"x")
    (d / "desktop.ini").write_bytes(b"[.ShellClassInfo]\r\n")
    (d / "Icon\r").write_bytes(b"")
    r = run("commit", "win", "--from", str(tmp_path / "win"))
    assert "3 rows" in r.out
    assert "not ingested: 3 files without an extension, hidden or a file manager's own" in r.err


def test_links_in_a_folder_of_archives(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "sl"
    _shards(d, n=1)
    _shards(tmp_path / "elsewhere", n=2)
    os.symlink(tmp_path / "elsewhere" / "shard-000001.tar", d / "shard-000001.tar")
    assert "4 rows" in run("commit", "sl", "--from", str(d)).out  # a link to a shard: read
    os.symlink(tmp_path / "not-fetched.tar", d / "shard-000002.tar")
    err = run("commit", "sl", "--from", str(d), rc=1).err
    assert "is a symbolic link to" in err and "not-fetched.tar', which does not exist" in err


def test_a_hard_link_to_a_symbolic_link_in_a_tar_is_a_symbolic_link(tmp_path: Path,
                                                                   run: RunFn) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:  # as GNU tar stores a folder holding
        for name, kind, target in (("a.jpg", tarfile.REGTYPE, ""),  # a hard link to a
                                   ("l.jpg", tarfile.SYMTYPE, "a.jpg"),  # symbolic link
                                   ("l2.jpg", tarfile.LNKTYPE, "l.jpg")):
            entry = tarfile.TarInfo(name)
            entry.type, entry.linkname = kind, target
            entry.size = 4 if kind == tarfile.REGTYPE else 0
            t.addfile(entry, io.BytesIO(b"AAAA") if kind == tarfile.REGTYPE else None)
    (tmp_path / "hs.tar").write_bytes(raw.getvalue())
    err = run("commit", "hs", "--from", str(tmp_path / "hs.tar")).err
    assert "skipped 2 symbolic links, not followed (l.jpg, l2.jpg)" in err
    assert "hard-dereference" not in err


def test_counts_of_one_are_singular(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "pl"
    (d / ".git").mkdir(parents=True)
    (d / "a.jpg").write_bytes(b"a")
    (d / ".git" / "HEAD").write_bytes(b"g")
    os.symlink("a.jpg", d / "l.jpg")
    r = run("commit", "pl", "--from", str(d))
    assert "skipped 1 hidden directory, not read (.git/)" in r.err
    assert "skipped 1 symbolic link, not followed (l.jpg)" in r.err
    assert ": 1 row in 1 shard (" in r.out and "uploaded 1 shard (" in r.out


def test_linked_shards_beside_a_stray_file_are_refused_too(tmp_path: Path, run: RunFn) -> None:
    _shards(tmp_path / "store", n=3)
    d = tmp_path / "annex"
    d.mkdir()
    for s in range(3):
        os.symlink(tmp_path / "store" / f"shard-{s:06d}.tar", d / f"shard-{s:06d}.tar")
    (d / "stats.json").write_text("{}")
    err = run("commit", "a", "--from", str(d), rc=1).err
    assert "holds 3 archives" in err
    assert "6 rows" in run("commit", "a", "--from", f"{d}/*.tar").out


def test_archives_paired_with_files_and_odd_folder_names(tmp_path: Path, run: RunFn) -> None:
    pk = tmp_path / "pk"
    _shards(pk, n=3)
    for s in range(3):
        (pk / f"shard-{s:06d}.json").write_text("{}")
    assert "3 rows" in run("commit", "pk", "--from", str(pk)).out  # tar + json per sample
    odd = tmp_path / "run[1]"
    _shards(odd, n=2)
    (odd / "sha256sums.txt").write_text("x")
    err = run("commit", "r", "--from", str(odd), rc=1).err
    pattern = f"{tmp_path}/run[[]1]/*.tar"
    assert f"--from '{pattern}'" in err
    assert "4 rows" in run("commit", "r", "--from", pattern).out


def test_more_system_files_are_not_samples(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "docs"
    (d / "$RECYCLE.BIN").mkdir(parents=True)
    (d / "a.txt").write_text("a")
    (d / "a.txt:Zone.Identifier").write_text("[ZoneTransfer]")
    (d / "~$report.docx").write_bytes(b"lock")
    (d / "$RECYCLE.BIN" / "x.txt").write_text("gone")
    r = run("commit", "docs", "--from", str(d))
    assert "1 row in 1 shard" in r.out and "not ingested: 3 files" in r.err


def test_a_link_that_loops_in_a_folder_of_archives_is_named(tmp_path: Path, run: RunFn) -> None:
    d = tmp_path / "sh"
    _shards(d, n=1)
    os.symlink("loop.tar", d / "loop.tar")
    err = run("commit", "s", "--from", str(d), rc=1).err
    assert "loop.tar' is a symbolic link to 'loop.tar'" in err and "links back to itself" in err


@pytest.mark.parametrize("layout", ["checksums", "two strays"])
def test_shards_with_checksums_or_two_strays_are_refused(tmp_path: Path, run: RunFn,
                                                         layout: str) -> None:
    d = tmp_path / "wds"
    _shards(d, n=3)
    if layout == "checksums":
        for s in range(3):
            (d / f"shard-{s:06d}.md5").write_text("x")
    else:
        (d / "stats.json").write_text("{}")
        (d / "sha256sums.txt").write_text("x")
    err = run("commit", "w", "--from", str(d), rc=1).err
    assert "holds 3 archives" in err
