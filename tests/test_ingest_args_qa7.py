"""from_archive's arguments as users pass them (QA pass 7): a pathlib.Path, one glob as a str."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

import dload_arrow as dl


def _tar(tmp_path: Path) -> Path:
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as tar:
        for name, data in (("s0.cls", b"1"), ("s0.txt", b"hi"), ("s1.cls", b"2"),
                           ("s1.txt", b"yo")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_pathlib_path_is_an_archive_path(tmp_path: Path) -> None:
    path = _tar(tmp_path)
    assert [s["__key__"] for s in dl.from_archive(path)] == ["s0", "s1"]
    with pytest.raises(TypeError, match=r"from_archive needs a path or URL.*NoneType"):
        dl.from_archive(None)  # type: ignore[arg-type]


def test_one_glob_given_as_a_str_is_one_glob_not_its_characters(tmp_path: Path) -> None:
    path = _tar(tmp_path)
    for kwargs in ({"include": "*.cls"}, {"exclude": "*.txt"}, {"include": ["*.cls"]}):
        got = list(dl.from_archive(path, **kwargs))  # type: ignore[arg-type]
        assert [sorted(s) for s in got] == [["__key__", "cls"]] * 2, kwargs
    with pytest.raises(TypeError, match=r"include= takes glob patterns as str.*int"):
        dl.from_archive(path, include=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"exclude= takes glob patterns"):
        dl.from_archive(path, exclude=[b"*.txt"])  # type: ignore[list-item]
