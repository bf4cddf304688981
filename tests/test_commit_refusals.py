"""Inputs Arrow accepts and a dataset could not store or read back: refused at commit, with
the column, the value and the fix, and nothing published."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from dload_arrow import NotFoundError, Repository, SchemaError


def _tensor_table(shape: str) -> pa.Table:
    field = pa.field("t", pa.list_(pa.int16(), 6), metadata={"dload.shape": shape})
    return pa.table({"__key__": ["x"], "t": pa.array([list(range(6))], field.type)},
                    schema=pa.schema([pa.field("__key__", pa.string()), field]))


@pytest.mark.parametrize(("shape", "words"), [
    ("[4, 2]", "holds 8 values, but the column's fixed-size lists hold 6"),
    ("garbage", "is not a JSON list of sizes"),
    ("[2, -3]", "is not a JSON list of sizes"),
    ("[2.0, 3]", "is not a JSON list of sizes"),
])
def test_a_tensor_shape_that_cannot_reshape_is_refused(repo: Repository, shape: str,
                                                       words: str) -> None:
    with pytest.raises(SchemaError, match="column 't'") as e:
        repo.commit("bad", _tensor_table(shape), progress=False)
    assert words in str(e.value)
    with pytest.raises(NotFoundError):
        repo.dataset("bad")  # nothing published


def test_a_good_tensor_shape_reads_back(repo: Repository) -> None:
    repo.commit("ok", _tensor_table("[2, 3]"), progress=False)
    assert repo.dataset("ok")[0]["t"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_a_shape_on_a_column_that_is_no_fixed_size_list_is_refused(repo: Repository) -> None:
    field = pa.field("t", pa.list_(pa.int16()), metadata={"dload.shape": "[2]"})
    table = pa.table({"__key__": ["x"], "t": pa.array([[1, 2]], field.type)},
                     schema=pa.schema([pa.field("__key__", pa.string()), field]))
    with pytest.raises(SchemaError, match="a tensor column is a fixed-size list"):
        repo.commit("bad", table, progress=False)


@pytest.mark.parametrize("samples", [
    [("a", {"x": {}, "n": 1})],
    pa.table({"__key__": ["a"], "x": pa.array([{}], pa.struct([]))}),
    pa.table({"__key__": ["a"], "x": pa.array([[{"e": {}}]],
                                              pa.list_(pa.struct([("e", pa.struct([]))])))}),
])
def test_an_empty_struct_is_refused_with_its_path(repo: Repository, samples: object) -> None:
    with pytest.raises(SchemaError, match="struct with no fields at 'x") as e:
        repo.commit("bad", samples, progress=False)
    assert "Parquet cannot store" in str(e.value)


def test_a_2d_array_into_a_shapeless_fixed_size_list_is_refused(repo: Repository) -> None:
    schema = pa.schema([("t", pa.list_(pa.float32(), 4))])
    square = np.arange(4, dtype=np.float32).reshape(2, 2)
    with pytest.raises(SchemaError, match=r"sample 'a', column 't': an array of shape \(2, 2\)"):
        repo.commit("t", [("a", {"t": square})], schema=schema, progress=False)
    # flat arrays, and a schema with the shape, are stored as asked
    repo.commit("flat", [("a", {"t": square.reshape(-1)})], schema=schema, progress=False)
    assert repo.dataset("flat")[0]["t"] == [0.0, 1.0, 2.0, 3.0]
    shaped = pa.schema([pa.field("t", pa.list_(pa.float32(), 4),
                                 metadata={"dload.shape": "[2, 2]"})])
    repo.commit("shaped", [("a", {"t": square})], schema=shaped, progress=False)
    assert repo.dataset("shaped")[0]["t"].tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_keys_that_are_not_utf8_are_refused_by_name(repo: Repository) -> None:
    with pytest.raises(SchemaError, match="lone surrogate"):
        repo.commit("k", [("ok", {"i": 0}), ("\ud800", {"i": 1})], progress=False)
    table = pa.table({"id": [b"fine", b"\xff"], "i": [1, 2]})
    with pytest.raises(SchemaError, match=r"key column 'id', row 1: key b'\\xff' is not UTF-8"):
        repo.commit("k", table, key="id", progress=False)
    nested = pa.table({"id": [{"a": 1}], "i": [1]})
    with pytest.raises(SchemaError, match=r"key column 'id' .* does not convert to strings"):
        repo.commit("k", nested, key="id", progress=False)
    repo.commit("k", pa.table({"id": [b"caf\xc3\xa9"], "i": [1]}), key="id", progress=False)
    assert repo.dataset("k").get("café")["i"] == 1


def test_a_negative_beside_a_uint64_value_is_named(repo: Repository) -> None:
    with pytest.raises(SchemaError) as e:
        repo.commit("u", [("a", {"x": 2**63 + 5}), ("b", {"x": -1})], progress=False)
    assert "sample 'b' has -1" in str(e.value)
    assert "no integer column holds both" in str(e.value)
    with pytest.raises(SchemaError, match=r"pa\.uint64\(\)"):  # alone it fits unsigned
        repo.commit("u", [("a", {"x": 2**63 + 5}), ("b", {"x": 1})], progress=False)


def test_a_column_empty_in_the_first_chunk_says_its_type_was_not_inferred(
        repo: Repository) -> None:
    samples = [(f"a{i:05d}", {"x": None}) for i in range(1024)] + [("b", {"x": "hello"})]
    with pytest.raises(SchemaError, match="it was None in every sample its type was inferred"):
        repo.commit("s", samples, progress=False)
    repo.commit("s", samples, schema=pa.schema([("x", pa.string())]), progress=False)
    assert repo.dataset("s").get("b")["x"] == "hello"


def test_to_polars_names_a_zone_polars_cannot_hold(repo: Repository) -> None:
    tz = dt.timezone(dt.timedelta(hours=5, minutes=30))
    repo.commit("z", [(f"k{i}", {"when": dt.datetime(2024, 1, 1, i, tzinfo=tz), "n": i})
                      for i in range(3)], progress=False)
    ds = repo.dataset("z")
    for columns in (None, ["n"]):  # polars fails on the files whichever columns are read
        with pytest.raises(SchemaError, match=r"column 'when' is in the time zone '\+05:30'"):
            ds.to_polars(columns=columns)
    assert ds.to_arrow(columns=["n"]).column("n").to_pylist() == [0, 1, 2]


def test_a_filter_on_a_fixed_offset_column_runs_in_polars(repo: Repository) -> None:
    tz = dt.timezone(dt.timedelta(hours=2))
    repo.commit("z", [(f"k{i}", {"when": dt.datetime(2024, 1, 1, i, tzinfo=tz), "n": i})
                      for i in range(3)], progress=False)
    view = repo.dataset("z").where("when >= '2024-01-01T00:00:00Z'")
    assert view.to_arrow().column("n").to_pylist() == [2]
    assert view.to_polars().collect()["n"].to_list() == [2]
    named = repo.dataset("z").where("when < '2023-12-31T23:30:00Z'")
    assert named.to_polars().collect()["n"].to_list() == [0, 1]
