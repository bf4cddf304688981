"""describe() counts of binary, tensor and list columns: recorded in the manifest at commit,
so they are exact on every root (remote ones included) without reading a shard byte."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dload_arrow import Repository
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.publish import store_manifest
from dload_arrow.store.refs import move_ref


def _rows(n: int, start: int = 0) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for i in range(start, start + n):
        out.append((f"k{i:03d}", {
            "blob": None if i % 3 == 0 else b"x" * i,
            "vec": None if i % 4 == 0 else np.full((2, 3), i, np.float32),
            "tags": None if i % 5 == 0 else ["a"] * (i % 2),  # empty lists are not nulls
            "n": i,
        }))
    return out


def _expected(n: int, start: int = 0) -> dict[str, int]:
    idx = range(start, start + n)
    return {"blob": sum(i % 3 == 0 for i in idx), "vec": sum(i % 4 == 0 for i in idx),
            "tags": sum(i % 5 == 0 for i in idx), "n": 0}


@pytest.mark.parametrize("root_name", ["local_root", "memory_root", "s3_root"])
def test_non_scalar_null_counts_are_exact_on_every_root(
        root_name: str, cache_dir: str, request: pytest.FixtureRequest) -> None:
    root = str(request.getfixturevalue(root_name))
    repo = Repository.open(root, cache_dir=cache_dir, cache_budget="unlimited")
    repo.commit("d", _rows(60), row_group_size=600, progress=False)  # several row groups
    ds = repo.dataset("d")
    assert len(ds.manifest.shards[0].rg_rows) > 1
    got = {r["column"]: r for r in ds.describe().to_pylist()}
    for column, nulls in _expected(60).items():
        assert (got[column]["nulls"], got[column]["count"]) == (nulls, 60 - nulls), column
    # and the same as counting the rows themselves
    exact = {r["column"]: r for r in ds.describe(exact=True).to_pylist()}
    assert all(exact[c]["nulls"] == got[c]["nulls"] for c in ("blob", "vec", "tags"))


def test_describe_on_s3_reads_no_shard(s3_root: str, cache_dir: str, s3_server: Any) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    repo.commit("d", _rows(30), progress=False)
    ds = repo.dataset("d")
    s3_server.clear()
    got = {r["column"]: r for r in ds.describe().to_pylist()}
    assert got["blob"]["nulls"] == _expected(30)["blob"]
    assert all(s3_server.count("GET", contains=s.digest) == 0 for s in ds.manifest.shards)


def test_a_filtered_view_does_not_report_whole_row_group_counts(memory_root: str,
                                                                cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    repo.commit("d", _rows(30), progress=False)
    got = {r["column"]: r for r in repo.dataset("d").where("n < 10").describe().to_pylist()}
    assert got["n"]["count"] == 10
    # counted from the rows the filter keeps, not the manifest's (of whole row groups)
    assert (got["blob"]["nulls"], got["blob"]["count"]) == (4, 6)


def _as_older_manifest(repo: Repository, name: str) -> str:
    """Rewrite ``name``'s latest manifest without the non-scalar null counts, as dload_arrow
    wrote it before recording them, and make it ``latest``; its version id."""
    m = repo.manifest(name)
    drop = [c for c in m.table.column_names
            if c.split(".", 1)[0] in ("nulls", "rg_nulls") and c.split(".", 1)[1] in
            ("blob", "vec", "tags")]
    old = Manifest(m.table.drop_columns(drop).replace_schema_metadata(m.table.schema.metadata))
    store_manifest(repo.storage, old)
    move_ref(repo.storage, name, "latest", old.version)
    return old.version


@pytest.mark.parametrize("root_name", ["local_root", "memory_root"])
def test_an_append_to_an_older_manifest_keeps_working(
        root_name: str, cache_dir: str, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(request.getfixturevalue(root_name))
    repo = Repository.open(root, cache_dir=cache_dir, cache_budget="unlimited")
    with monkeypatch.context() as m:  # shards as written before tensors were stored as bytes
        m.setattr("dload_arrow.store.shard.packable", lambda schema: [])
        # and before blobs lost their Parquet statistics (whose null counts are read here)
        m.setattr("dload_arrow.store.shard.statistics_columns", lambda stored: True)
        repo.commit("d", _rows(30), progress=False)
    _as_older_manifest(repo, "d")
    older = {r["column"]: r for r in repo.dataset("d").describe().to_pylist()}
    repo.append("d", _rows(30, start=30), progress=False)
    ds = repo.dataset("d")
    assert ds.manifest.num_rows == 60
    got = {r["column"]: r for r in ds.describe().to_pylist()}
    want = _expected(60)
    if root_name == "local_root":  # the older shards' counts come from their footers
        assert got["blob"]["nulls"] == want["blob"] and got["vec"]["nulls"] == want["vec"]
        assert older["blob"]["nulls"] == _expected(30)["blob"]
    else:  # remote: unknown rather than wrong (no shard bytes are read)
        assert got["blob"]["nulls"] is None and older["blob"]["nulls"] is None
    # the appended shards alone are counted from the manifest
    new = [(s, r) for s, e in enumerate(ds.manifest.shards) if e.row_offset >= 30
           for r in range(len(e.rg_rows))]
    from dload_arrow.catalog.column_stats import manifest_rows

    rows = {r["column"]: r for r in manifest_rows(ds.context, ds.manifest, new)}
    assert rows["blob"]["nulls"] == _expected(30, start=30)["blob"]
    assert rows["tags"]["nulls"] == _expected(30, start=30)["tags"]


def test_a_views_non_scalar_counts_are_those_of_its_rows(repo: Repository) -> None:
    repo.commit("d", _rows(60), row_group_size=600, progress=False)
    view = repo.dataset("d").where("n >= 12 AND n < 40")
    got = {r["column"]: r for r in view.describe().to_pylist()}
    for column, nulls in _expected(28, start=12).items():
        assert (got[column]["nulls"], got[column]["count"]) == (nulls, 28 - nulls), column
    assert {r["source"] for r in got.values()} == {"data"}
