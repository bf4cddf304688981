"""Ingest QA round 10: an archive pipeline's fingerprint names its samples (globs, split, the
archive), and names that never become keys (hidden, no extension) are not refused for bytes
that are not UTF-8."""

from __future__ import annotations

import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow import from_archive


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_state_of_an_archive_pipeline_is_refused_by_one_over_other_samples(
        tmp_path: Path) -> None:
    zpath = tmp_path / "d.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for p in "ab":
            for i in range(6):
                z.writestr(f"{p}{i}.txt", f"{p}{i}")
    whole = from_archive(zpath)
    it = iter(whole)
    for _ in range(4):
        next(it)
    state = whole.state_dict()
    assert from_archive(zpath).fingerprint() == whole.fingerprint()  # the same samples
    fewer = from_archive(zpath, exclude=["a*"])
    with pytest.raises(dl.ConfigError, match="saved from another pipeline"):
        fewer.load_state_dict(state)
    assert from_archive(zpath, split="first").fingerprint() == whole.fingerprint()  # same keys
    with zipfile.ZipFile(zpath, "a") as z:
        z.writestr("c0.txt", "c0")  # another archive at the same path
    with pytest.raises(dl.ConfigError, match="saved from another pipeline"):
        from_archive(zpath).load_state_dict(state)


def test_names_that_never_make_keys_are_shown_not_refused_for_non_utf8_bytes(
        run: RunFn, local_root: str, tmp_path: Path) -> None:
    src = os.path.join(str(tmp_path), "src").encode()
    os.makedirs(os.path.join(src, b".cache"))
    for name, data in ((b"a.jpg", b"jpg"), (b".cache/caf\xe9.tmp", b"x"), (b".caf\xe9", b"x"),
                       (b"NOTES-caf\xe9", b"x")):
        with open(os.path.join(src, name), "wb") as f:
            f.write(data)
    tar = tmp_path / "d.tar"
    with tarfile.open(tar, "w") as t:
        for name in (b"a.jpg", b".cache/caf\xe9.tmp"):
            t.add(os.path.join(src, name), arcname=os.fsdecode(name))
    folder = run("commit", "f", "--from", os.fsdecode(src))
    assert r"NOTES-caf\xe9" in folder.err
    archive = run("commit", "t", "--from", str(tar))
    assert (r"not ingested: 1 file without an extension, hidden or a file manager's own "
            r"(.cache/caf\xe9.tmp)") in \
        archive.err
    repo = dl.Repository.open(local_root)
    assert [s["__key__"] for s in repo.dataset("f").samples()] == ["a"]
    assert [s["__key__"] for s in repo.dataset("t").samples()] == ["a"]
    with open(os.path.join(src, b"caf\xe9.jpg"), "wb") as f:
        f.write(b"y")  # a name that would be a key: still refused
    assert "not UTF-8" in run("commit", "g", "--from", os.fsdecode(src), rc=1).err
