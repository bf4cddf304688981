"""Derive QA round 10: keys as commit takes them, force=True retires other names' memos, a
memo under another name lends no meta or recipe, stable descriptions and fingerprints (no
object address, sets refused as columns, complex numbers hashed), the meta key 'derived' and
another root's datasets refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dload_arrow as dl


def _src(repo: dl.Repository) -> dl.Dataset:
    repo.commit("src", [(f"k{i}", {"x": i, "y": -i}) for i in range(5)], progress=False)
    return repo.dataset("src")


def test_derived_keys_follow_commits_rule(repo: dl.Repository) -> None:
    items = dl.from_iterable([{"__key__": b"img-001", "x": 1}])
    with pytest.raises(dl.SchemaError, match=r"has __key__ b'img-001'; keys must be non-empty "
                                             r"strings \(or integers\)"):
        repo.derive("b", items)
    ints = dl.from_iterable([{"__key__": np.array(7), "x": 1}, {"__key__": np.int64(8), "x": 2}])
    repo.derive("i", ints)
    assert [s["__key__"] for s in repo.dataset("i").samples()] == ["7", "8"]
    with pytest.raises(dl.SchemaError, match=r"has __key__ 1\.5"):
        repo.derive("f", dl.from_iterable([{"__key__": 1.5, "x": 1}]))


def test_force_retires_the_memos_of_other_names(repo: dl.Repository) -> None:
    scale = {"k": 10}

    def times(s: dict) -> dict:
        return {"v": s["x"] * scale["k"]}  # reads a dict the fingerprint does not see change

    pipe = _src(repo).pipeline().map(times)
    repo.derive("backup", pipe)
    repo.derive("train", pipe)
    scale["k"] = 1000
    repo.derive("train", pipe, force=True)
    repo.derive("eval", pipe)
    assert [s["v"] for s in repo.dataset("eval").samples()] == [0, 1000, 2000, 3000, 4000]


def test_a_memo_under_another_name_lends_neither_meta_nor_recipe(
        repo: dl.Repository, tmp_path: Path) -> None:
    pipe = _src(repo).pipeline().select(["x"])
    repo.derive("alice-set", pipe, meta={"owner": "alice"}, recipe="# alice's script\n")
    bob = repo.derive("bob-set", pipe)
    assert set(bob.manifest.meta) == {"derived"} and bob.manifest.recipe is None
    fresh = dl.Repository.open(str(tmp_path / "fresh"), cache_dir=str(tmp_path / "fc"))
    assert fresh.derive("bob-set", _src(fresh).pipeline().select(["x"])).version == bob.version


class Squares:
    def __len__(self) -> int:
        return 3

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([{"x": i * i} for i in range(3)])


def test_descriptions_and_fingerprints_are_stable(repo: dl.Repository) -> None:
    v = repo.derive("sq", dl.from_iterable(Squares()))
    assert " at 0x" not in v.manifest.meta["derived"]["pipeline"]
    with pytest.raises(TypeError, match="got a set"):
        _src(repo).pipeline().select({"x", "y"})
    w = {"c": 1 + 2j}

    def mag(s: dict) -> dict:
        return {"m": abs(s["x"] * w["c"])}

    from dload_arrow.pipeline.fingerprint import fingerprint

    pipe = _src(repo).pipeline().map(mag)
    before = fingerprint(pipe)
    w["c"] = 3 + 4j  # a global the map reads: hashed by value, as other numbers are
    assert fingerprint(pipe) != before


def test_a_meta_key_named_derived_and_another_roots_dataset_are_refused(
        repo: dl.Repository, tmp_path: Path) -> None:
    pipe = _src(repo).pipeline()
    with pytest.raises(dl.ConfigError, match="meta key 'derived' is derive's own record"):
        repo.derive("d", pipe, meta={"derived": "from the March export"})
    other = dl.Repository.open(str(tmp_path / "other"), cache_dir=str(tmp_path / "oc"))
    with pytest.raises(dl.ConfigError, match="reads 'src' of another root"):
        other.derive("out", pipe)
    assert other.datasets() == []
