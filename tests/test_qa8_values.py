"""Values are stored as given, and the same rows get the same id from any input (QA pass 8).

Found by QA: a struct value with a field its column's type lacks lost that field without an
error (given schema=, inferred from earlier samples, inside a list, or from a table with a
wider struct), and rows committed from polars or pandas got another version id and a second
copy of their shards than the same rows from pairs or a pyarrow table, because those
libraries hand over large strings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from dload_arrow import NotFoundError, Repository, SchemaError
from dload_arrow.store.table_columns import storable

S = pa.struct([("a", pa.int64())])
LATE = 1100  # past the first chunk of samples, from which types are inferred


@pytest.mark.parametrize(("rows", "schema", "key", "path"), [
    ([("k1", {"s": {"a": 1, "b": 2}})], pa.schema([("s", S)]), "k1", "s.b"),
    ([(f"k{i:05d}", {"s": {"a": i}}) for i in range(LATE)] + [("zlast", {"s": {"a": 1, "b": 2}})],
     None, "zlast", "s.b"),
    ([(f"k{i:05d}", {"l": [{"a": i}]}) for i in range(LATE)]
     + [("zlast", {"l": [{"a": 1}, {"a": 1, "b": "lost"}]})], None, "zlast", "l[].b"),
    ([("k1", {"s": {"t": {"x": 1}}}), ("k2", {"s": {"t": {"x": 2, "y": 3}}})],
     pa.schema([("s", pa.struct([("t", pa.struct([("x", pa.int64())]))]))]), "k2", "s.t.y"),
    ([("k1", {"m": {"u": {"a": 1, "c": 2}}})], pa.schema([("m", pa.map_(pa.string(), S))]),
     "k1", "m[].c"),
])
def test_a_struct_field_the_type_lacks_is_refused_naming_sample_column_and_field(
        repo: Repository, rows: list[Any], schema: pa.Schema | None, key: str,
        path: str) -> None:
    col = path.split(".")[0].split("[")[0]
    with pytest.raises(SchemaError, match=rf"sample '{key}', column '{col}': field "
                                          rf"'{re.escape(path)}' is not in.*drop it from "
                                          r"the sample, or add the field to that type in a "
                                          r"commit's schema="):
        repo.commit("d", rows, schema=schema, progress=False)
    with pytest.raises(NotFoundError):
        repo.dataset("d")


def test_a_sample_dict_without_some_struct_fields_still_stores_them_as_null(
        repo: Repository) -> None:
    schema = pa.schema([("s", pa.struct([("a", pa.int64()), ("b", pa.string())]))])
    repo.commit("d", [("k1", {"s": {"a": 1}}), ("k2", {"s": {"b": "x", "a": 2}})],
                schema=schema, progress=False)
    assert repo.dataset("d").get("k1")["s"] == {"a": 1, "b": None}
    assert repo.dataset("d").get("k2")["s"] == {"a": 2, "b": "x"}


@pytest.mark.parametrize(("values", "typ"), [
    ([{"a": 1}, {"a": 2, "b": 3}], S),
    ([[{"a": 1}], [{"a": 2, "b": 3}]], pa.list_(S)),
])
def test_a_table_with_a_wider_struct_than_the_schema_is_refused_naming_the_row(
        repo: Repository, values: list[Any], typ: pa.DataType) -> None:
    table = pa.table({"__key__": ["k0", "k1"], "s": values})
    with pytest.raises(SchemaError, match=r"column 's' is .*b: int64.*the value at row 1"):
        repo.commit("d", table, schema=pa.schema([("s", typ)]), progress=False)
    repo.commit("d", pa.table({"__key__": ["k0"], "s": values[:1]}), progress=False)
    with pytest.raises(SchemaError, match=r"column 's' is .*b: int64.*'d' stores"):
        repo.append("d", pa.table({"__key__": ["k2"], "s": values[1:]}), progress=False)
    assert repo.dataset("d").num_rows == 1


def test_a_later_batch_with_a_wider_struct_is_refused(repo: Repository) -> None:
    first = pa.record_batch({"__key__": ["k0"], "s": [{"a": 1}]})
    wider = pa.record_batch({"__key__": ["k1"], "s": [{"a": 2, "b": 3}]})
    reader = pa.RecordBatchReader.from_batches(first.schema, iter([first, wider.cast(
        pa.schema([("__key__", pa.string()), ("s", pa.struct([("a", pa.int64()),
                                                               ("b", pa.int64())]))]))]))
    with pytest.raises(SchemaError, match=r"batch at row 1: column 's'.*\{'a': 2, 'b': 3\}"):
        repo.commit("d", reader, progress=False)


def test_a_wider_struct_whose_extra_field_is_null_loses_nothing_and_is_stored(
        repo: Repository) -> None:
    table = pa.table({"__key__": ["k0"], "s": pa.array([{"a": 1, "b": None}],
                                                       pa.struct([("a", pa.int64()),
                                                                  ("b", pa.int64())]))})
    repo.commit("d", table, schema=pa.schema([("s", S)]), progress=False)
    assert repo.dataset("d").get("k0")["s"] == {"a": 1}


def _rows(n: int) -> dict[str, list[Any]]:
    return {"id": [f"k{i}" for i in range(n)], "s": [f"v{i}" for i in range(n)],
            "b": [b"x" * i for i in range(n)], "l": [[f"t{i}", "u"] for i in range(n)],
            "st": [{"name": f"n{i}", "raw": b"r"} for i in range(n)]}


def test_the_same_rows_get_the_same_id_from_pairs_a_table_polars_and_pandas(
        repo: Repository) -> None:
    cols = _rows(50)
    pairs = [(k, {c: cols[c][i] for c in cols if c != "id"}) for i, k in enumerate(cols["id"])]
    versions = {
        "pairs": repo.commit("same", pairs, progress=False),
        "table": repo.commit("same", pa.table(cols), key="id", progress=False),
        "polars": repo.commit("same", pl.DataFrame(cols), key="id", progress=False),
        "pandas": repo.commit("same", pd.DataFrame(cols), key="id", progress=False),
    }
    assert pl.DataFrame(cols).to_arrow().schema.field("s").type == pa.large_string()
    assert {v.version for v in versions.values()} == {versions["pairs"].version}
    assert [v.shards_uploaded for v in versions.values()][1:] == [0, 0, 0]
    schema = repo.dataset("same").schema
    assert schema.field("s").type == pa.string()
    assert schema.field("l").type == pa.list_(pa.string())
    assert schema.field("st").type == pa.struct([("name", pa.string()), ("raw", pa.binary())])


def test_storable_makes_large_and_view_types_plain_at_every_depth() -> None:
    typ = pa.struct([("l", pa.large_list(pa.large_string())),
                     ("m", pa.map_(pa.large_string(), pa.large_binary())),
                     ("f", pa.list_(pa.string_view(), 2))])
    col = pa.array([{"l": ["a"], "m": [("k", b"v")], "f": ["x", "y"]}, None], typ)
    field, out = storable(pa.field("c", typ, metadata={b"x": b"1"}), col)
    assert field.type == pa.struct([("l", pa.list_(pa.string())),
                                    ("m", pa.map_(pa.string(), pa.binary())),
                                    ("f", pa.list_(pa.string(), 2))])
    assert field.metadata == {b"x": b"1"}
    assert out.type == field.type and out.to_pylist() == col.to_pylist()
    cat = pa.array(["a", "b", "a"], pa.large_string()).dictionary_encode()
    assert storable(pa.field("c", cat.type), cat)[1].type == pa.dictionary(pa.int32(),
                                                                           pa.string())


def test_storable_keeps_a_large_type_over_2_gib_in_one_batch() -> None:
    size = 2**31 + 10  # zeroed pages the test never touches
    data = pa.py_buffer(np.zeros(size, np.uint8))
    offsets = pa.py_buffer(np.array([0, size], np.int64))
    col = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, data])
    field, out = storable(pa.field("c", pa.large_binary()), col)
    assert field.type == pa.large_binary() and out is col


def test_appends_to_a_dataset_stored_with_large_types_keep_them(repo: Repository) -> None:
    types = {"s": pa.large_string(), "b": pa.large_binary(), "l": pa.large_list(pa.large_string())}
    cols = _rows(4)
    del cols["st"]
    old = pa.table({c: pa.array(v, types.get(c)) for c, v in cols.items()})
    repo.commit("old", old.slice(0, 1), key="id", schema=pa.schema(types), progress=False)
    assert repo.dataset("old").schema.field("s").type == pa.large_string()
    repo.append("old", pl.DataFrame(old.slice(1, 1)), key="id", progress=False)
    repo.append("old", old.slice(2, 1).to_pandas(), key="id", progress=False)
    repo.append("old", [("k3", {"s": "v3", "b": b"xxx", "l": ["t3", "u"]})], progress=False)
    ds = repo.dataset("old")
    assert [ds.schema.field(c).type for c in types] == list(types.values())
    got = ds.to_arrow().sort_by("__key__")
    assert got.column("s").to_pylist() == cols["s"]
    assert got.column("l").to_pylist() == cols["l"]
    assert got.column("b").to_pylist() == cols["b"]


def test_the_rows_of_to_polars_commit_back_as_the_same_tensor_dataset(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    rows = [(f"k{i}", {"image": np.full((4, 3), i, np.float32), "label": i}) for i in range(6)]
    v = repo.commit("d", rows, progress=False)
    df = repo.dataset("d").to_polars().collect()
    assert isinstance(df.schema["image"], pl.Array)  # nested: shape (4, 3)
    again = repo.commit("d", df, key="__key__", progress=False)
    assert again.version == v.version and again.shards_uploaded == 0
    assert repo.dataset("d")[2]["image"].shape == (4, 3)


def test_a_dataset_that_stored_a_nested_list_keeps_it_on_append(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    nested = pa.list_(pa.list_(pa.float32(), 3), 2)
    schema = pa.schema([pa.field("__key__", pa.string(), False), pa.field("a", nested)])
    values = pa.array([[[1.0, 2, 3], [4, 5, 6]], [[7, 8, 9], [0, 1, 2]]], nested)
    repo.commit("n", pa.table({"__key__": ["x", "y"], "a": values}), schema=schema,
                progress=False)
    assert repo.dataset("n").schema.field("a").type == nested  # as schema= asked
    more = pl.DataFrame({"__key__": ["z"], "a": [[[1.0, 1, 1], [2, 2, 2]]]},
                        schema={"__key__": pl.String, "a": pl.Array(pl.Float32, (2, 3))})
    repo.append("n", more, key="__key__", progress=False)
    got = repo.dataset("n").to_arrow()
    assert got.schema.field("a").type == nested
    assert got.column("a").to_pylist()[2] == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]


def test_an_append_into_a_null_column_says_how_to_keep_the_values(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    repo.commit("o", pa.table({"__key__": ["a"], "c": pa.nulls(1)}), progress=False)
    with pytest.raises(SchemaError) as e:
        repo.append("o", pa.table({"__key__": ["b"], "c": ["x"]}), progress=False)
    text = str(e.value)
    assert "a null column holds no value" in text and "schema=" in text
    assert "Cast the column to null" not in text  # that would throw the values away


def test_list_views_commit_intact_and_empty_fixed_size_lists_are_refused(
        tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    lv = pa.ListViewArray.from_arrays(pa.array([0, 2]), pa.array([2, 1]), pa.array([1, 2, 3]))
    repo.commit("lv", pa.table({"__key__": ["a", "b"], "v": lv}), progress=False)
    assert repo.dataset("lv").to_arrow().column("v").to_pylist() == [[1, 2], [3]]
    empty = pa.array([[], []], pa.list_(pa.int64(), 0))
    with pytest.raises(SchemaError, match="column 'e': a fixed-size list of 0 values"):
        repo.commit("e", pa.table({"__key__": ["a", "b"], "e": empty}), progress=False)


def test_a_polars_array_with_a_missing_number_in_a_later_chunk_commits_as_one_tensor(
        tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    arr = pl.Array(pl.Float32, (2, 2))
    dense = pl.DataFrame({"__key__": ["a", "b"], "x": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]},
                         schema={"__key__": pl.String, "x": arr})
    holey = pl.DataFrame({"__key__": ["c"], "x": [[[1, None], [3, 4]]]},
                         schema={"__key__": pl.String, "x": arr})
    df = pl.concat([dense, holey], rechunk=False)  # two chunks, as two files give
    assert df["x"].n_chunks() == 2
    repo.commit("t", df, key="__key__", progress=False)
    ds = repo.dataset("t")
    assert ds.schema.field("x").type == pa.list_(pa.float32(), 4)
    assert ds.schema.field("x").metadata == {b"dload.shape": b"[2, 2]"}
    assert ds.get("a")["x"].shape == (2, 2)
    got = np.asarray(ds.get("c")["x"], dtype=np.float64).reshape(-1)
    assert np.isnan(got[1]) and got[[0, 2, 3]].tolist() == [1, 3, 4]  # a float tensor: NaN
    assert ds.to_arrow().column("x").to_pylist()[2] == [1, None, 3, 4]  # stored as a null
    batch = next(iter(ds.pipeline().batch(3)))
    assert batch["x"][2] is not None and batch["x"][0].shape == (2, 2)
