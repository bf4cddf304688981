"""QA lookup60: a feature/embedding table read by key."""

from __future__ import annotations

import pickle
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.errors import MissingKeyError


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")


def test_a_dataset_pickles_after_a_lookup(repo: dl.Repository) -> None:
    """Its lookup index holds a lock: spawn DataLoader workers failed to start."""
    repo.commit("items", [(f"item-{i}", {"x": i}) for i in range(50)], progress=False)
    for view in (repo.dataset("items"), repo.dataset("items").where("x < 20")):
        assert view.get("item-1")["x"] == 1 and "item-3" in view
        back = pickle.loads(pickle.dumps(view))
        assert back.get("item-2")["x"] == 2 and back.num_rows == view.num_rows
        pipe = pickle.loads(pickle.dumps(view.pipeline().batch(10)))
        assert sum(len(b["__key__"]) for b in pipe) == view.num_rows


def test_take_of_ints_on_number_keys_warns_that_ints_are_positions(repo: dl.Repository
                                                                   ) -> None:
    ids = np.arange(100, 0, -1) * 7
    repo.commit("feat", pa.table({"item_id": ids, "ctr": ids / 1000}), key="item_id",
                progress=False)
    ds = repo.dataset("feat")
    with pytest.warns(UserWarning, match=r"take\(\) reads ints as positions, and the keys of "
                      r"this dataset look like numbers.*ds\.take\(\[str\(i\) for i in ids\]\)"):
        t = ds.take(np.array([7, 14]))
    assert t.column("__key__").to_pylist() == ["651", "602"]  # positions, as documented
    with warnings.catch_warnings():  # once per dataset object; ds[i] never
        warnings.simplefilter("error")
        ds.take([1, 2])
        assert ds[3]["__key__"] == repo.dataset("feat")[3]["__key__"]
        with pytest.raises(TypeError, match="ints"):
            repo.dataset("feat").take([None])  # type: ignore[list-item]
    assert ds.take(["7", "14"]).column("ctr").to_pylist() == [0.007, 0.014]
    repo.commit("plain", [{"x": i} for i in range(20)], progress=False)  # generated keys
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repo.dataset("plain").take([3]).column("x").to_pylist() == [3]


def test_a_miss_names_a_stored_key_in_another_unicode_form(repo: dl.Repository) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    repo.commit("menu", [(nfd, {"p": 1}), ("x" * 5000, {"p": 2})], progress=False)
    ds = repo.dataset("menu")
    with pytest.raises(MissingKeyError, match=r"stored key 'cafe\\u0301' differs from "
                       r"'caf\\xe9' only in Unicode normalization"):
        ds.get("café")
    assert ds.get(unicodedata.normalize("NFD", "café"))["p"] == 1
    with pytest.raises(MissingKeyError) as e:
        ds.get("y" * 5000)
    assert len(str(e.value)) < 600 and "(5000 chars)" in str(e.value)
    assert ds.get("caff", default=None) is None


def test_a_miss_on_sorted_keys_names_no_twin_that_is_not_stored(repo: dl.Repository) -> None:
    """QA review60c: sorted keys locate where a key would be, not whether it is there."""
    repo.commit("m", [("a", {"p": 0}), ("b", {"p": 1}), ("cafe", {"p": 2})], progress=False)
    ds = repo.dataset("m")
    for form in ("NFC", "NFD"):
        with pytest.raises(MissingKeyError) as e:
            ds.get(unicodedata.normalize(form, "café"))
        assert "Unicode" not in str(e.value)
