"""A data engineer's week (QA eng58): keys lost by a derive, codes read as numbers, other
delimiters, unused SQL parameters."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from dload_arrow import Repository


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    r = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    r.commit("people", [("007", {"name": "Ann", "age": 31}), ("009", {"name": "Cy", "age": 45})],
             progress=False)
    return r


@pytest.mark.parametrize("how", ["select", "map"])
def test_a_derive_that_drops_the_keys_warns(repo: Repository, how: str) -> None:
    """The sources' keys became row numbers without a word."""
    ds = repo.dataset("people")
    pipe = (ds.pipeline().select(["name"]) if how == "select"
            else ds.pipeline().map(lambda r: {"name": r["name"].upper()}))
    with pytest.warns(UserWarning, match=r"items carry no __key__ .* keyed by position"):
        repo.derive(f"clean-{how}", pipe)
    assert repo.dataset(f"clean-{how}").to_arrow().column("__key__").to_pylist() == [
        "000000000000", "000000000001"]
    with warnings.catch_warnings():  # keys kept: nothing to say
        warnings.simplefilter("error")
        repo.derive("kept", ds.pipeline().select(["__key__", "name"]))
    assert repo.dataset("kept").to_arrow().column("__key__").to_pylist() == ["007", "009"]
