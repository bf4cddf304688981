"""Exploration: to_arrow, to_polars (lazy, pushdown), to_pandas, head, describe."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from catalog_data import make_history
from readback import read_back

from dload_arrow import Dataset, Repository

SCALARS = ["__key__", "label", "score", "tag", "flag"]


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Repository:
    d = tmp_path_factory.mktemp("explore")
    repo = Repository.open(d / "root", cache_dir=d / "cache", cache_budget="unlimited")
    make_history(repo)
    return repo


def as_rows(obj: pa.Table | pl.DataFrame, columns: list[str] = SCALARS) -> list[tuple]:
    table = obj.to_arrow() if isinstance(obj, pl.DataFrame) else obj
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def test_to_arrow_is_every_row_in_storage_order(shared_repo: Repository) -> None:
    ds = shared_repo.dataset("a")
    got = ds.to_arrow()
    want = read_back(shared_repo, "a")
    assert got.schema.names == want.schema.names
    assert got.equals(want.cast(got.schema))
    part = ds.to_arrow(columns=["score"])
    assert part.column_names == ["__key__", "score"]


@pytest.mark.parametrize("condition", [None, "label = 3 or tag is null", "score < 0.2"])
def test_polars_pandas_and_arrow_agree(shared_repo: Repository, condition: str | None) -> None:
    ds = shared_repo.dataset("a")
    view = ds if condition is None else ds.where(condition)
    arrow = view.to_arrow()
    lazy = view.to_polars()
    assert isinstance(lazy, pl.LazyFrame)
    frame = lazy.collect()
    assert as_rows(frame) == as_rows(arrow)
    assert frame["vec"].to_list() == arrow.column("vec").to_pylist()
    pandas = view.to_pandas()
    assert list(pandas["__key__"]) == arrow.column("__key__").to_pylist()
    assert pandas["score"].tolist() == arrow.column("score").to_pylist()


def test_to_polars_pushes_projection_and_predicate_down(shared_repo: Repository) -> None:
    lf = shared_repo.dataset("a").where("label = 3").to_polars(columns=["score"])
    plan = lf.explain()
    assert "PARQUET" in plan.upper() or "SCAN" in plan.upper()
    assert "SELECTION" in plan.upper() or "FILTER" in plan.upper()
    assert "PROJECT" in plan.upper()
    assert lf.collect().columns == ["__key__", "score"]
    assert lf.collect().height == 50


def test_to_polars_of_a_row_group_subset_is_exact(shared_repo: Repository) -> None:
    ds = shared_repo.dataset("a")
    units = [(0, 1), (1, 0), (2, 0)]
    subset = Dataset(shared_repo, ds.manifest, units=units)
    assert as_rows(subset.to_polars().collect()) == as_rows(subset.to_arrow())
    want = sum(ds.manifest.shards[s].rg_rows[r] for s, r in units)
    assert subset.to_arrow().num_rows == want


def test_head_returns_the_first_rows(shared_repo: Repository) -> None:
    ds = shared_repo.dataset("a")
    assert as_rows(ds.head(7)) == as_rows(ds.to_arrow().slice(0, 7))
    view = ds.where("tag = 'fox'")
    assert as_rows(view.head(3)) == as_rows(view.to_arrow().slice(0, 3))
    assert ds.head(0).num_rows == 0
    assert ds.head(10_000).num_rows == ds.num_rows


def test_head_reads_only_the_first_row_groups_by_range(
    s3_repo: Repository, s3_server,  # type: ignore[no-untyped-def]
) -> None:
    make_history(s3_repo)
    ds = s3_repo.dataset("a")
    assert len(ds.manifest.shards) > 1
    s3_server.clear()
    got = as_rows(ds.head(5))
    first = ds.manifest.shards[0].digest
    assert s3_server.count("GET", contains="shards/", ranged=False) == 0  # no whole shard
    assert s3_server.count("GET", contains=first, ranged=True) == 2  # footer + row group
    assert s3_server.count("GET", contains="shards/") == 2
    assert got == as_rows(ds.to_arrow().slice(0, 5))
    assert ds.head(5, columns=["tag"]).column_names == ["__key__", "tag"]


def test_describe_from_statistics_matches_the_data(
    s3_repo: Repository, s3_server,  # type: ignore[no-untyped-def]
) -> None:
    make_history(s3_repo)
    ds = s3_repo.dataset("a")
    s3_server.clear()
    desc = {r["column"]: r for r in ds.describe().to_pylist()}
    assert s3_server.count("GET", contains="shards/") == 0  # statistics only: no data read
    data = ds.to_arrow()
    for c in ["label", "score", "tag", "__key__"]:
        col = data.column(c)
        mm = pc.min_max(col)
        assert desc[c]["count"] == len(col) - col.null_count
        assert desc[c]["nulls"] == col.null_count
        assert desc[c]["min"] == str(mm["min"].as_py())
        assert desc[c]["max"] == str(mm["max"].as_py())
        assert desc[c]["source"] == "manifest"
    assert desc["vec"]["type"].startswith("fixed_size_list")


def test_describe_of_a_view_measures_the_filtered_rows(shared_repo: Repository) -> None:
    view = shared_repo.dataset("a").where("label between 2 and 3")
    desc = {r["column"]: r for r in view.describe().to_pylist()}
    data = view.to_arrow()
    assert desc["label"]["count"] == data.num_rows == 100
    assert desc["label"]["min"] == "2" and desc["label"]["max"] == "3"
    assert desc["score"]["mean"] == pytest.approx(pc.mean(data.column("score")).as_py())
    assert desc["label"]["source"] == "data"


def test_polars_over_an_s3_root_reads_through_the_cache(s3_repo: Repository) -> None:
    make_history(s3_repo)
    view = s3_repo.dataset("a").where("label >= 8")
    assert as_rows(view.to_polars().collect()) == as_rows(view.to_arrow())


@pytest.mark.parametrize("nan_first", [True, False])
def test_a_row_group_of_nan_only_does_not_make_the_bounds_nan(repo: Repository,
                                                             nan_first: bool) -> None:
    """QA: min()/max() over row-group bounds kept a leading NaN, so describe() and the
    manifest's shard bounds said nan when the first row group held only NaN."""
    nan = float("nan")
    vals = [nan] * 100 + [float(i) for i in range(100, 200)]
    if not nan_first:
        vals.reverse()
    repo.commit("nn", [(f"k{i:03d}", {"x": v}) for i, v in enumerate(vals)],
                row_group_size="1KiB", progress=False)
    ds = repo.dataset("nn")
    assert len(ds.manifest.shards[0].rg_rows) > 2  # several row groups, one of NaN only
    row = next(r for r in ds.describe(exact=False).to_pylist() if r["column"] == "x")
    assert (row["min"], row["max"]) == ("100.0", "199.0")
    t = ds.manifest.table
    assert (t.column("min.x")[0].as_py(), t.column("max.x")[0].as_py()) == (100.0, 199.0)
    assert ds.where("x >= 150").to_arrow().num_rows == 50  # pruning unchanged
