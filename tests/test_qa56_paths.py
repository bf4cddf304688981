"""Paths given as what they are not (QA api55, left then): ``Repository.open(5)``,
``open_table(7)`` ended in Python's own ``expected str, bytes or os.PathLike`` from deep inside,
naming neither the call nor the argument, and ``open_source(b"/data")`` failed later mixing
bytes and str. ``check_path`` names both, and takes bytes as the path they spell (as
``Repository.open`` already did: tests/test_config_qa_config.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from dload_arrow import Repository
from dload_arrow.args import check_path
from dload_arrow.ingest import open_source, open_table


@pytest.mark.parametrize("bad", [5, 3.0, ["/tmp/x"], True])
def test_repository_open_names_a_root_that_is_no_path(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"Repository\.open\(root=.*\): root must be a str or a "
                                        r"pathlib\.Path"):
        Repository.open(bad)
    with pytest.raises(TypeError, match=r"cache_dir must be a str or a pathlib\.Path"):
        Repository.open(cache_dir=bad)


def test_bytes_paths_are_the_paths_they_spell(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("hi")
    src = open_source(os.fsencode(tmp_path / "d"))  # type: ignore[arg-type]
    assert [s["__key__"] for s in src] == ["a"]
    with pytest.raises(TypeError, match=r"open_table\(path=7\): path must be a str"):
        open_table(7)  # type: ignore[arg-type]


def test_str_and_paths_are_accepted(tmp_path: Path) -> None:
    assert check_path("f", "p", tmp_path) == str(tmp_path)
    assert check_path("f", "p", "rel/x") == "rel/x"
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    assert repo.storage.url.endswith("/root")
    assert repo.settings.cache_dir == str(tmp_path / "cache")


def test_a_pathlike_of_bytes_is_its_path(tmp_path: Path) -> None:
    class BytesPath:
        def __fspath__(self) -> bytes:
            return os.fsencode(tmp_path / "r")

    assert check_path("f", "p", BytesPath()) == str(tmp_path / "r")
