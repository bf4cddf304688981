"""Wrong-value arguments to the public API fail when the call is made, with an error naming
the parameter, the value and what is allowed (not a bare numpy/Arrow error, and not a silent
acceptance that fails or misbehaves later)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, Repository, SchemaError


@pytest.fixture
def ds(repo: Repository) -> Any:
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(6)], progress=False)
    return repo.dataset("d")


@pytest.fixture
def torch_api() -> Any:
    pytest.importorskip("torch")
    import dload_arrow.torch as dt

    return dt


_READS = {
    "head": lambda ds, c: ds.head(2, columns=c),
    "take": lambda ds, c: ds.take([0], columns=c),
    "to_arrow": lambda ds, c: ds.to_arrow(columns=c),
    "to_pandas": lambda ds, c: ds.to_pandas(columns=c),
    "to_polars": lambda ds, c: ds.to_polars(columns=c),
    "samples": lambda ds, c: ds.samples(columns=c),
    "batches": lambda ds, c: ds.batches(columns=c),
    "pipeline": lambda ds, c: ds.pipeline(columns=c),
    "select": lambda ds, c: ds.pipeline().select(c),
}


@pytest.mark.parametrize("call", sorted(_READS))
@pytest.mark.parametrize("bad", [3, 2.5, True, object()], ids=["int", "float", "bool", "obj"])
def test_columns_of_the_wrong_kind_are_refused_naming_columns(ds: Any, call: str,
                                                              bad: Any) -> None:
    if call == "to_pandas":
        pytest.importorskip("pandas")
    if call == "to_polars":
        pytest.importorskip("polars")
    with pytest.raises(TypeError, match=r"columns=.*: columns must be a list of column names"):
        _READS[call](ds, bad)


def test_one_column_name_as_a_str_still_reads_that_column(ds: Any) -> None:
    assert ds.to_arrow("x").column_names == ["__key__", "x"]
    assert next(iter(ds.pipeline("x"))) == {"__key__": "k0", "x": 0}
    assert next(iter(ds.pipeline().select("x"))) == {"x": 0}


def test_select_of_a_missing_column_is_a_schema_error_at_the_call(ds: Any) -> None:
    with pytest.raises(SchemaError, match=r"no column\(s\) \['nope'\]; rows have \['__key__', "
                                          r"'x'\]"):
        ds.pipeline().select(["x", "nope"])
    with pytest.raises(SchemaError, match=r"no column\(s\) \['nope'\]"):
        ds.pipeline(columns=["nope"])
    # rows of unknown schema (after map) are checked as they arrive, with the same error
    pipe = ds.map(lambda s: {"y": s["x"]}).select(["x"])
    with pytest.raises(SchemaError, match=r"no column\(s\) \['x'\]; rows have \['y'\]"):
        list(pipe)


@pytest.mark.parametrize("bad", [None, 2.0])
def test_take_of_a_non_list_names_items(ds: Any, bad: Any) -> None:
    with pytest.raises(TypeError, match=r"take\(items=.*\): items must be a list of positions"):
        ds.take(bad)


_COMBINE = {
    "mix": lambda p: dl.mix(p),
    "concat": lambda p: dl.concat(p),
    "zip_with": lambda p: dl.zip_with(p),
    "choice": lambda p: dl.choice(p, [1.0]),
    "select": lambda p: dl.select(dl.from_iterable([0]), p),
}


@pytest.mark.parametrize("call", sorted(_COMBINE))
@pytest.mark.parametrize("bad", [None, 7, "ab"])
def test_combinators_refuse_pipes_that_are_not_a_list(call: str, bad: Any) -> None:
    with pytest.raises(TypeError, match=rf"{call}\(pipes=.*\): pipes must be a list of pipelines"):
        _COMBINE[call](bad)


@pytest.mark.parametrize("bad", ["2", None, 2.5, math.nan, True])
def test_consumers_must_be_an_int(ds: Any, bad: Any) -> None:
    with pytest.raises(TypeError, match="consumers must be an int >= 1"):
        ds.plan(consumers=bad)
    with pytest.raises(TypeError, match=r"check\(consumers=.*\): consumers must be an int"):
        ds.pipeline().check(consumers=bad)
    with pytest.raises(TypeError, match="consumers must be an int"):  # no dataset source
        dl.from_iterable([1]).check(consumers=bad)


@pytest.mark.parametrize("bad", ["2", 2.5, math.nan, True])
def test_prefetch_must_be_an_int_when_the_read_is_asked_for(ds: Any, bad: Any) -> None:
    for call in (ds.samples, ds.batches, ds.plan):
        with pytest.raises(TypeError, match=r"prefetch=.*: prefetch must be an int >= 0"):
            call(prefetch=bad)  # the generators too: before the first next()


def test_shard_through_and_sql_name_their_parameter(repo: Repository, ds: Any) -> None:
    with pytest.raises(TypeError, match=r"shard\(index='0'\): index must be an int >= 0"):
        ds.pipeline().shard("0", 2)
    with pytest.raises(TypeError, match=r"through\(fn=None\): fn must be a function"):
        ds.pipeline().through(None)
    for bad in (None, 1, ["select 1"]):
        with pytest.raises(TypeError, match=r"sql\(query=.*\): query must be SQL text"):
            repo.sql(bad)


def test_huge_counts_are_refused_with_the_bound(ds: Any) -> None:
    with pytest.raises(ValueError, match="at most 9,223,372,036,854,775,807"):
        ds.head(10**30)
    with pytest.raises(ValueError, match=r"shard\(count=10+\): count must be at most"):
        ds.pipeline().shard(0, 10**30)
    with pytest.raises(ValueError, match="count \\* block must be at most"):
        ds.pipeline().shard(0, 2**40, 2**40)
    with pytest.raises(ValueError, match=r"take\(n=10+\): n must be at most"):
        ds.pipeline().take(10**30)


def test_open_refuses_storage_options_and_endpoint_of_the_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"storage_options must be a dict of fsspec options .*"
                                        "got a str") as e:
        Repository.open("s3://bkt/x", cache_dir=tmp_path / "c", storage_options="key=secret")
    assert "secret" not in str(e.value)  # options may hold credentials: only the type shows
    with pytest.raises(TypeError, match="storage_options must be a dict"):
        Repository.open(tmp_path / "root", cache_dir=tmp_path / "c", storage_options="ignored")
    with pytest.raises(TypeError, match=r"endpoint_url must be a URL as a str .*got an int"):
        Repository.open(tmp_path / "root", cache_dir=tmp_path / "c", endpoint_url=7)
    assert Repository.open(tmp_path / "root", cache_dir=tmp_path / "c",
                           storage_options={"anon": True}).datasets() == []


def test_a_bare_pipeline_says_how_to_make_one() -> None:
    with pytest.raises(NotImplementedError, match=r"ds\.pipeline\(\).*dl\.from_iterable"):
        list(dl.Pipeline())


def test_zip_with_checks_its_function_at_the_call(ds: Any) -> None:
    with pytest.raises(TypeError, match=r"zip_with\(fn='concat'\): fn must be a function"):
        dl.zip_with([ds.pipeline(), ds.pipeline()], fn="concat")


@pytest.mark.parametrize("op", ["map", "map_batches", "flat_map", "scan"])
def test_only_filter_suggests_where_for_text(ds: Any, op: str) -> None:
    args = ("x * 2", 0) if op == "scan" else ("x * 2",)
    with pytest.raises(TypeError, match=rf"{op}\(\) takes a function") as e:
        getattr(ds.pipeline(), op)(*args)
    assert "where" not in str(e.value)
    with pytest.raises(TypeError, match=r"where\(\.\.\.\)"):
        ds.filter("x > 2")


@pytest.mark.parametrize("kw", [{"shard_size": 0}, {"row_group_size": 0},
                                {"row_group_size": ""}])
def test_append_checks_sizes_like_commit(repo: Repository, ds: Any, kw: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kw))):
        repo.append("d", [("z", {"x": 9})], progress=False, **kw)
    assert repo.dataset("d").num_rows == 6


_BOOLS = {
    "gc(dry_run)": lambda r, ds, v: r.gc(dry_run=v),
    "plan(full_shuffle)": lambda r, ds, v: ds.plan(full_shuffle=v),
    "batch(drop_last)": lambda r, ds, v: ds.pipeline().batch(2, drop_last=v),
    "map_batches(rows_preserved)": lambda r, ds, v: ds.map_batches(lambda b: b,
                                                                   rows_preserved=v),
    "mix(exact)": lambda r, ds, v: dl.mix([ds, ds], exact=v),
    "shuffle(full)": lambda r, ds, v: ds.shuffle(full=v),
    "describe(exact)": lambda r, ds, v: ds.describe(exact=v),
    "commit(progress)": lambda r, ds, v: r.commit("e", [("a", {"x": 1})], progress=v),
    "derive(force)": lambda r, ds, v: r.derive("e", ds.pipeline(), force=v),
}


@pytest.mark.parametrize("call", sorted(_BOOLS))
@pytest.mark.parametrize("bad", ["no", 0, 1.0])
def test_bool_parameters_refuse_other_values(repo: Repository, ds: Any, call: str,
                                             bad: Any) -> None:
    name = call[call.index("(") + 1 : -1]
    with pytest.raises(TypeError, match=rf"{name}={bad!r}\): {name} must be True"
                                        if "progress" not in call else
                                        rf"progress={bad!r}: progress must be True, False or None"):
        _BOOLS[call](repo, ds, bad)
    assert "e" not in repo.datasets()


def test_gc_dry_run_none_is_refused_not_a_real_run(repo: Repository, ds: Any) -> None:
    with pytest.raises(TypeError, match="dry_run must be True or False, got None"):
        repo.gc(grace=0, dry_run=None)


def test_torch_helpers_refuse_wrong_kinds(torch_api: Any, ds: Any) -> None:
    dt = torch_api
    with pytest.raises(TypeError, match=r"sample_to_torch\(sample=None\): sample must be a dict"):
        dt.sample_to_torch(None)
    with pytest.raises(TypeError, match=r"column_to_tensor\(column=\[1, 2\]\): column must be"):
        dt.column_to_tensor([1, 2])
    with pytest.raises(TypeError, match=r"column_to_tensor\(field='s'\): field must be a pyarrow"):
        dt.column_to_tensor(pa.array([1, 2]), field="s")
    for bad in ("ab", None):
        with pytest.raises(TypeError, match=r"collate\(samples=.*\): samples must be a list"):
            dt.collate(bad)
    with pytest.raises(TypeError, match="collate: samples must be dicts"):
        dt.collate([{"x": 1}, 2])
    assert dt.collate([]) == {}
    with pytest.raises(TypeError, match=r"to_torch\(schema='s'\): schema must be a pyarrow"):
        dt.to_torch({"x": 1}, schema="s")
    with pytest.raises(TypeError, match=r"to_device\(loader=None\): loader must be an iterable"):
        dt.to_device(None, "cpu")
    with pytest.raises(ConfigError, match="length='abc': give the epoch's item count"):
        dt.as_iterable_dataset(ds.pipeline(), length="abc")
    with pytest.raises(ConfigError, match=r"world_size=10+: need an int of at most"):
        dt.as_iterable_dataset(ds.pipeline(), rank=0, world_size=10**30)
    with pytest.raises(TypeError, match=r"StatefulLoader\(num_workers=1.5\): num_workers must"):
        dt.StatefulLoader(dt.as_iterable_dataset(ds.pipeline()), num_workers=1.5)


def test_column_to_tensor_uses_the_field_for_a_tensor_column(torch_api: Any,
                                                             repo: Repository) -> None:
    import numpy as np

    repo.commit("t", [("a", {"img": np.arange(6, dtype=np.int32).reshape(2, 3)})],
                progress=False)
    batch = next(repo.dataset("t").batches())
    col, field = batch.column("img"), batch.schema.field("img")
    assert tuple(torch_api.column_to_tensor(col, field).shape) == (1, 2, 3)
    assert tuple(torch_api.column_to_tensor(col).shape) == (1, 6)  # documented: no field
