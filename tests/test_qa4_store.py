"""QA pass 4 (a newcomer's first hours): commit inputs, column types, batches, iterations.

Each test fails on the code before the fix it names.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from readback import shard_paths

from dload_arrow import ConfigError, IntegrityError, NotFoundError, Repository, SchemaError
from dload_arrow.catalog.predicate import PredicateError

SMALL: dict[str, Any] = {"progress": False}


def test_a_tensor_of_another_shape_is_refused_not_reshaped(repo: Repository) -> None:
    a = np.arange(6).reshape(2, 3)
    for other in (a.reshape(3, 2), np.arange(6), a.reshape(6, 1)):
        shape = re.escape(str(tuple(other.shape)))
        with pytest.raises(SchemaError, match=r"sample 'b', column 'x': a tensor of shape "
                           rf"{shape}.*holds tensors of shape \(2, 3\)"):
            repo.commit("t", [("a", {"x": a}), ("b", {"x": other})], **SMALL)
    repo.commit("t", [("a", {"x": a})], **SMALL)
    with pytest.raises(SchemaError, match=r"shape \(3, 2\)"):
        repo.append("t", [("b", {"x": a.reshape(3, 2)})])
    assert [s["x"].shape for s in repo.dataset("t").samples()] == [(2, 3)]


def test_arrays_whose_shapes_vary_go_into_a_nested_list_column(repo: Repository) -> None:
    rows = [("a", {"x": np.ones((2, 2), np.float32)}), ("b", {"x": np.zeros((3, 1), np.float32)})]
    schema = pa.schema([("x", pa.list_(pa.list_(pa.float32())))])
    repo.commit("r", rows, schema=schema, **SMALL)
    got = {s["__key__"]: s["x"] for s in repo.dataset("r").samples()}
    assert got == {"a": [[1.0, 1.0], [1.0, 1.0]], "b": [[0.0], [0.0], [0.0]]}


def test_big_endian_arrays_are_stored_by_value(repo: Repository) -> None:
    t = np.arange(6, dtype=">f4").reshape(2, 3)
    repo.commit("be", [("a", {"t": t, "n": np.int64(7).astype(">i8")})], **SMALL)
    s = repo.dataset("be").get("a")
    assert s["t"].dtype == np.float32 and s["t"].tolist() == t.tolist()


def test_durations_commit_without_statistics(repo: Repository) -> None:
    df = pd.DataFrame({"d": pd.to_timedelta([1, 2], unit="s"), "n": [1, 2]})
    repo.commit("dur", df, **SMALL)
    repo.commit("dur2", [("a", {"d": dt.timedelta(seconds=3)})], **SMALL)
    assert [s["d"] for s in repo.dataset("dur").samples()] == [
        dt.timedelta(seconds=1), dt.timedelta(seconds=2)]
    assert repo.dataset("dur2").get("a")["d"] == dt.timedelta(seconds=3)
    with pytest.raises(PredicateError, match=r"column 'd' is duration.*IS NULL"):
        repo.dataset("dur").where("d > '00:00:01'")  # no ISO-time hint: none would work
    assert repo.dataset("dur").where("d IS NOT NULL").to_arrow().num_rows == 2


def test_string_view_columns_are_stored_as_strings(repo: Repository) -> None:
    table = pa.table({"id": ["a", "b"], "s": pa.array(["x", "y"], pa.string_view()),
                      "n": [1, 2]})
    repo.commit("sv", table, key="id", **SMALL)
    ds = repo.dataset("sv")
    assert ds.schema.field("s").type == pa.string()
    assert ds.where("n = 2").to_arrow().column("s").to_pylist() == ["y"]
    assert sorted(s["s"] for s in ds.shuffle(seed=0)) == ["x", "y"]
    assert ds.take(["b"]).column("s").to_pylist() == ["y"]


def test_a_batch_keeps_tensor_shapes_when_some_rows_are_null(repo: Repository) -> None:
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    repo.commit("nt", [("a", {"x": x}), ("b", {"x": None}), ("c", {"x": x + 1})], **SMALL)
    batch = next(iter(repo.dataset("nt").pipeline().batch(3)))
    got = batch["x"]
    assert got[1] is None and got[0].shape == (2, 2) and got[2].tolist() == (x + 1).tolist()


def test_input_shapes_get_answers(repo: Repository) -> None:
    repo.commit("ik", [(1, {"x": 1}), (2, {"x": 2})], **SMALL)
    assert [s["__key__"] for s in repo.dataset("ik").samples()] == ["1", "2"]
    repo.commit("ds", {"a": {"x": 1}, "b": {"x": 2}}, **SMALL)  # {key: sample}
    assert {s["__key__"]: s["x"] for s in repo.dataset("ds").samples()} == {"a": 1, "b": 2}
    with pytest.raises(SchemaError, match=r"cannot commit a dict .*pa\.table\(d\)"):
        repo.commit("bad", {"x": [1, 2], "y": [3, 4]}, **SMALL)
    with pytest.raises(SchemaError, match=r"pandas Series.*to_frame\(\)"):
        repo.commit("bad", pd.Series([1, 2], name="x"), **SMALL)


def test_take_of_an_int_points_to_indexing_and_head(repo: Repository) -> None:
    repo.commit("tk", [(f"k{i}", {"x": i}) for i in range(20)], **SMALL)
    ds = repo.dataset("tk")
    with pytest.raises(TypeError, match=r"take\(\[10\]\) or ds\[10\].*head\(10\)"):
        ds.take(10)  # type: ignore[arg-type]
    assert ds[10]["x"] == 10


def test_an_append_of_a_stored_key_says_it_is_stored(repo: Repository) -> None:
    repo.commit("ak", [("a", {"x": 1})], **SMALL)
    with pytest.raises(SchemaError, match=r"append to 'ak': 1 key\(s\) are already stored.*"
                       r"'a'.*cannot replace them"):
        repo.append("ak", [("a", {"x": 2})])


def test_an_iteration_replaced_by_a_newer_one_says_so(repo: Repository) -> None:
    repo.commit("it", [(f"k{i:04d}", {"x": i}) for i in range(3000)], **SMALL)
    pipe = repo.dataset("it").shuffle(500, seed=1)
    training = iter(pipe)
    seen = [next(training) for _ in range(300)]
    assert len(seen) == 300
    next(iter(pipe))  # a peek: a new epoch of the same pipeline
    with pytest.raises(ConfigError, match=r"ended by a newer iter\(\) of the same pipeline"):
        next(training)  # at once: no item of its buffer comes out after the peek
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in pipe:
                pass
        except BaseException as e:  # collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(e, ConfigError) for e in errors), errors


def test_streaming_a_corrupt_local_shard_names_it(repo: Repository) -> None:
    repo.commit("cs", [(f"k{i:04d}", {"s": f"value-{i}" * 50}) for i in range(400)], **SMALL)
    (obj,) = shard_paths(repo, "cs")
    path = repo.storage.local_path(obj)
    assert path is not None
    data = bytearray(Path(path).read_bytes())
    mid = len(data) // 3
    data[mid:mid + 64] = bytes(64)  # zeroes inside the column data
    Path(path).write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=r"shard [0-9a-f]{12} of dataset 'cs'.*corrupt"):
        list(repo.dataset("cs").samples())


def test_dataframes_of_tensor_columns_commit_back_as_tensors(repo: Repository) -> None:
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    repo.commit("t", [("a", {"x": x[0]}), ("b", {"x": None}), ("c", {"x": x[1]})], **SMALL)
    ds = repo.dataset("t")
    frame = ds.to_pandas()
    repo.commit("from_pandas", frame, key="__key__", **SMALL)
    copy = repo.dataset("from_pandas")
    assert copy.schema.field("x").type == pa.list_(pa.float32(), 6)
    got = {s["__key__"]: s["x"] for s in copy.samples()}
    assert got["b"] is None and got["c"].shape == (2, 3)
    assert got["c"].tolist() == x[1].tolist()
    # appended back to a tensor dataset, a polars Array of the shape is flattened into it
    renamed = ds.to_polars().collect().with_columns(
        (pl.col("__key__") + "2").alias("__key__"))
    repo.append("t", renamed, key="__key__")
    again = {s["__key__"]: s["x"] for s in repo.dataset("t").samples()}
    assert again["c2"].shape == (2, 3) and again["c2"].tolist() == x[1].tolist()
    assert again["b2"] is None
    # pandas' own conversions stay: 1-D arrays (ragged or not) and NaN for missing cells
    lists = pd.DataFrame({"k": ["a", "b", "c"],
                          "v": [np.arange(3), np.arange(2), float("nan")]})
    repo.commit("lists", lists, key="k", **SMALL)
    assert [s["v"] for s in repo.dataset("lists").samples()] == [[0, 1, 2], [0, 1], None]
    only = pd.DataFrame({"emb": [np.ones((2, 2)), np.zeros((2, 2))]})  # no other column
    repo.commit("only", only, **SMALL)
    assert [s["emb"].shape for s in repo.dataset("only").samples()] == [(2, 2), (2, 2)]


def test_integer_dictionary_columns_read_back(repo: Repository) -> None:
    table = pa.table({"n": pa.array([3, 1, 3]).dictionary_encode(),
                      "s": pa.array(["a", "b", "a"]).dictionary_encode()})
    repo.commit("dict", table, **SMALL)
    ds = repo.dataset("dict")
    assert ds.schema.field("n").type == pa.int64()  # decoded: Arrow cannot read it back
    assert pa.types.is_dictionary(ds.schema.field("s").type)  # a categorical stays one
    assert [(s["n"], s["s"]) for s in ds.samples()] == [(3, "a"), (1, "b"), (3, "a")]
    assert ds.where("n = 3").to_arrow().num_rows == 2


def test_streaming_a_missing_local_shard_names_it(repo: Repository) -> None:
    repo.commit("ms", [(f"k{i:04d}", {"x": i}) for i in range(10)], **SMALL)
    (obj,) = shard_paths(repo, "ms")
    path = repo.storage.local_path(obj)
    assert path is not None
    Path(path).unlink()
    ds = repo.dataset("ms")
    # to_polars() and SQL hand the paths to polars and DuckDB: they said "No such file" (at
    # collect(), for polars) without naming the dataset.
    reads: list[Callable[[], object]] = [
        lambda: list(ds.samples()), lambda: ds[0], lambda: ds.get("k0001"),
        lambda: ds.to_polars(), lambda: repo.sql("SELECT count(*) FROM samples('ms')")]
    for read in reads:
        with pytest.raises(NotFoundError, match=r"shard [0-9a-f]{12} of dataset 'ms' is miss"):
            read()


def test_a_polars_array_of_another_shape_is_not_flattened_into_a_tensor(
        repo: Repository) -> None:
    repo.commit("sh", [("a", {"x": np.zeros((3, 2), np.float32)})], **SMALL)
    other = pl.DataFrame({"__key__": ["b"], "x": [np.ones((2, 3), np.float32)]},
                         schema={"__key__": pl.String, "x": pl.Array(pl.Float32, (2, 3))})
    with pytest.raises(SchemaError, match=r"column 'x'"):
        repo.append("sh", other, key="__key__")
    assert [s["x"].shape for s in repo.dataset("sh").samples()] == [(3, 2)]
