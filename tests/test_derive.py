"""repo.derive: computes once per pipeline definition, records lineage, survives races."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import Repository

HERE = Path(__file__).parent


def _count_file() -> Path:
    return Path(os.environ["DERIVE_CALLS"])


def double(row: dict[str, Any]) -> dict[str, Any]:
    """The map function; every call is counted in a file (works across processes)."""
    with open(_count_file(), "a") as f:
        f.write("x")
    return {"__key__": row["__key__"], "x": row["x"], "y": row["x"] * 2}


def triple(row: dict[str, Any]) -> dict[str, Any]:
    with open(_count_file(), "a") as f:
        f.write("x")
    return {"__key__": row["__key__"], "x": row["x"], "y": row["x"] * 3}


def calls() -> int:
    p = _count_file()
    return len(p.read_text()) if p.exists() else 0


def pipeline(repo: Repository, fn: Any = double) -> dl.Pipeline:
    return repo.dataset("src").shuffle(30, seed=2).map(fn).filter(lambda r: r["x"] % 5 != 0)


def derive_in_process(root: str, cache: str, counter: str) -> str:
    os.environ["DERIVE_CALLS"] = counter
    repo = Repository.open(root, cache_dir=cache, cache_budget="unlimited")
    return repo.derive("dbl", pipeline(repo)).version


@pytest.fixture
def src(repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repository:
    monkeypatch.setenv("DERIVE_CALLS", str(tmp_path / "calls"))
    repo.commit("src", [(f"k{i:03d}", {"x": i}) for i in range(100)], row_group_size=300,
                progress=False)
    return repo


def test_derive_runs_once_and_records_lineage(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    assert calls() == 100
    ds = src.dataset("dbl")
    assert ds.version == v1.version
    assert sorted(r["y"] for r in ds.pipeline()) == sorted(2 * x for x in range(100) if x % 5)
    fp = pipeline(src).fingerprint()
    assert ds.parents == [{"name": "src", "version": src.dataset("src").version,
                           "relation": "derive", "fingerprint": fp}]
    assert ds.meta["derived"]["fingerprint"] == fp
    memo = json.loads(src.storage.read(f"derived/{fp}.dbl"))
    assert memo["name"] == "dbl" and memo["version"] == v1.version

    v2 = src.derive("dbl", pipeline(src))  # a fresh but identical pipeline
    assert v2.version == v1.version and v2.shards_uploaded == 0
    assert calls() == 100, "the map function ran again"


def test_another_machine_on_the_same_root_reuses_the_result(
    src: Repository, local_root: str, tmp_path: Path
) -> None:
    v1 = src.derive("dbl", pipeline(src))
    before = calls()
    code = ("import sys, test_derive as t; "
            f"print(t.derive_in_process({local_root!r}, {str(tmp_path / 'other')!r}, "
            f"{os.environ['DERIVE_CALLS']!r}))")
    env = dict(os.environ, PYTHONPATH=str(HERE))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == v1.version
    assert calls() == before


def test_concurrent_derives_end_with_one_version(src: Repository, local_root: str,
                                                 tmp_path: Path) -> None:
    counter = os.environ["DERIVE_CALLS"]
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        futs = [pool.submit(derive_in_process, local_root, str(tmp_path / f"c{i}"), counter)
                for i in range(2)]
        ids = {f.result() for f in futs}
    assert len(ids) == 1
    assert [v.version for v in src.versions("dbl")] == list(ids)
    assert len(src.storage.list("derived/")) == 1


def test_a_changed_function_is_a_new_derivation(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    v3 = src.derive("dbl", pipeline(src, triple))
    assert v3.version != v1.version and calls() == 200
    assert len(src.storage.list("derived/")) == 2


def test_rm_clears_the_memo_and_derive_recomputes(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    src.rm("dbl")
    assert src.storage.list("derived/") == []
    v2 = src.derive("dbl", pipeline(src))
    assert calls() == 200
    assert v2.version == v1.version  # same rows, same content-addressed version


def test_derive_on_s3(s3_repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DERIVE_CALLS", str(tmp_path / "calls"))
    s3_repo.commit("src", [(f"k{i:03d}", {"x": i}) for i in range(40)], progress=False)
    v1 = s3_repo.derive("dbl", s3_repo.dataset("src").map(double))
    v2 = s3_repo.derive("dbl", s3_repo.dataset("src").map(double))
    assert v1.version == v2.version and calls() == 40


def test_derive_refuses_an_endless_pipeline(src: Repository) -> None:
    with pytest.raises(ValueError, match="finite"):
        src.derive("forever", src.dataset("src").pipeline().repeat())


def test_derive_without_dataset_sources_generates_keys(src: Repository) -> None:
    v = src.derive("gen", dl.from_iterable(list(range(5))).map(lambda i: {"i": i}))
    ds = src.dataset("gen")
    assert ds.parents == [] and v.num_rows == 5
    assert [r["__key__"] for r in ds.pipeline()] == [f"{i:012d}" for i in range(5)]


def test_deriving_under_another_name_creates_it_from_the_same_shards(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    v2 = src.derive("dbl-copy", pipeline(src))
    assert calls() == 100, "the map function ran again"
    assert v2.name == "dbl-copy" and v2.shards_uploaded == 0
    # its own manifest is written, and counted as every commit counts it
    stored = src.storage.read(f"datasets/dbl-copy/manifests/{v2.version}.arrow")
    assert v2.bytes_uploaded == v2.manifest_bytes_uploaded == len(stored) > 0
    assert src.derive("dbl-copy", pipeline(src)).bytes_uploaded == 0  # stored already
    assert src.datasets() == ["dbl", "dbl-copy", "src"]
    copy = src.dataset("dbl-copy")
    assert copy.version == v2.version != v1.version
    assert copy.manifest.digests() == v1.manifest.digests()
    assert copy.parents == src.dataset("dbl").parents
    assert src.dataset("dbl").version == v1.version
    src.rm("dbl")  # the copy keeps its memo and its data; deriving "dbl" again reuses it
    assert sorted(r["y"] for r in copy.pipeline()) == sorted(2 * x for x in range(100) if x % 5)
    v3 = src.derive("dbl", pipeline(src))
    assert v3.version == v1.version and calls() == 100


def test_a_new_meta_or_recipe_is_a_new_version_over_the_same_shards(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src), meta={"note": "a"})
    v2 = src.derive("dbl", pipeline(src), meta={"note": "b"}, recipe="make.py")
    assert calls() == 100 and v2.version != v1.version
    ds = src.dataset("dbl")
    assert ds.version == v2.version and ds.meta["note"] == "b" and ds.recipe == "make.py"
    assert ds.meta["derived"]["fingerprint"] == pipeline(src).fingerprint()
    assert ds.manifest.digests() == v1.manifest.digests()
    v3 = src.derive("dbl", pipeline(src), meta={"note": "a"})  # recipe omitted: kept
    assert v3.version not in (v1.version, v2.version) and calls() == 100
    assert src.dataset("dbl").recipe == "make.py" and src.dataset("dbl").meta["note"] == "a"
    assert src.derive("dbl", pipeline(src)).version == v3.version  # both omitted: the memo
    assert src.dataset("dbl").version == v3.version and calls() == 100


def test_derive_points_latest_back_at_the_derived_version(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    src.commit("dbl", [("other", {"x": 1, "y": 1})], progress=False)
    assert src.dataset("dbl").version != v1.version
    v2 = src.derive("dbl", pipeline(src))
    assert v2.version == v1.version and calls() == 100
    assert src.dataset("dbl").version == v1.version
    assert src.log("dbl")[-1].action == "derive"


def test_other_commit_options_are_another_derivation(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    v2 = src.derive("dbl", pipeline(src), row_group_size=400)
    assert calls() == 200 and v2.version != v1.version
    assert src.dataset("dbl").manifest.info["settings"]["row_group_size"] == 400
    assert src.derive("dbl", pipeline(src), row_group_size=400).version == v2.version
    assert calls() == 200


def test_force_runs_a_memoized_pipeline_again(src: Repository) -> None:
    v1 = src.derive("dbl", pipeline(src))
    v2 = src.derive("dbl", pipeline(src), force=True)
    assert calls() == 200 and v2.version == v1.version


def test_derive_refuses_a_batched_pipeline(src: Repository) -> None:
    with pytest.raises(dl.SchemaError, match="do not batch"):
        src.derive("bat", src.dataset("src").pipeline().batch(10))
    batches = src.dataset("src").pipeline().batch(10).map(lambda b: dict(b))
    with pytest.raises(dl.SchemaError, match="do not batch"):
        src.derive("bat", batches)
    assert "bat" not in src.datasets()
    v = src.derive("unbat", src.dataset("src").pipeline().batch(10).unbatch())
    assert v.num_rows == 100 and src.dataset("unbat")[0]["__key__"] == "k000"


def test_derived_rows_keep_their_stored_types(repo: Repository) -> None:
    t = pa.table({"k": ["a", "b"], "label": pa.array([None, None], pa.int8()),
                  "x": pa.array([1, 2], pa.int8()), "f": pa.array([1.5, None], pa.float32())})
    repo.commit("src", t, key="k", progress=False)
    src = repo.dataset("src")
    for name, pipe in (("copy", src.pipeline()), ("view", src.where("x > 0")),
                       ("shuf", src.shuffle(seed=0))):
        repo.derive(name, pipe)
        assert repo.dataset(name).schema == src.schema, name
    repo.append("copy", pa.table({"k": ["c"], "label": pa.array([3], pa.int8()),
                                  "x": pa.array([3], pa.int8()), "f": [2.0]}),
                key="k", progress=False)
    assert repo.dataset("copy").to_arrow().column("label").to_pylist() == [None, None, 3]
