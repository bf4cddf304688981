"""QA clip60 and tabular60: ingestion warnings and refusals a training team met."""

from __future__ import annotations

import io
import tarfile
import warnings
from pathlib import Path

import pytest

from dload_arrow import Repository
from dload_arrow.ingest import open_source


def _captions_tar(path: Path, n: int, start: int = 0) -> Path:
    with tarfile.open(path, "w") as tf:
        for i in range(start, start + n):
            for name, data in ((f"{i:06d}.jpg", b"\xff\xd8jpeg" + bytes([i])),
                               (f"{i:06d}.en.txt", f"a cat {i}".encode()),
                               (f"{i:06d}.de.txt", f"eine Katze {i}".encode())):
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return path


def test_captions_in_two_languages_split_at_the_last_dot_are_warned_of(tmp_path: Path) -> None:
    """x.jpg, x.en.txt, x.de.txt made three samples per image, none with both, silently."""
    tar = _captions_tar(tmp_path / "wds-000000.tar", 20)
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    with pytest.warns(UserWarning, match=r"40 of the 60 samples are another sample's key plus "
                      r"a suffix \('000000\.(en|de)' beside '000000'.*--split first.*columns "
                      r"de\.txt, en\.txt, jpg\Z"):
        repo.commit("caps", open_source(tar), progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = repo.commit("caps2", open_source(tar, split="first"), progress=False)
    assert v.num_rows == 20
    assert repo.dataset("caps2").schema.names == ["__key__", "de.txt", "en.txt", "jpg"]


def test_a_few_dotted_names_among_many_samples_are_not_warned_of(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    for i in range(30):
        (d / f"img{i}.jpg").write_bytes(b"x")
    (d / "img1.v2.jpg").write_bytes(b"y")  # one re-export beside its original
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repo.commit("pics", open_source(d), progress=False).num_rows == 31


def test_no_dotted_advice_that_split_first_would_not_keep(tmp_path: Path) -> None:
    """QA review60: keys holding a dot (cam1.000) would merge into one sample under --split
    first; a frame sequence on one key (shot.0001.exr beside shot.json) is no set of views;
    a set of archives warns once."""
    d = tmp_path / "d"
    d.mkdir()
    for i in range(10):
        for f in (f"cam1.{i:03d}.jpg", f"cam1.{i:03d}.en.txt", f"cam1.{i:03d}.de.txt"):
            (d / f).write_bytes(b"x")
    e = tmp_path / "e"
    e.mkdir()
    for i in range(300):
        (e / f"shot010.{i:04d}.exr").write_bytes(b"x")
    (e / "shot010.json").write_bytes(b"{}")
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        repo.commit("cams", open_source(d), progress=False)
        repo.commit("frames", open_source(e), progress=False)
    assert not [w for w in rec if "another sample's key" in str(w.message)]
    from test_cli import dload

    tars = [str(_captions_tar(tmp_path / f"wds-{i:06d}.tar", 20, 100 * i)) for i in range(3)]
    r = dload("commit", "caps", *(a for t in tars for a in ("--from", t)), "--root",
              str(tmp_path / "root2"), "--cache-dir", str(tmp_path / "c"), cwd=tmp_path)
    assert r.err.count("another sample's key plus") == 1, r.err
