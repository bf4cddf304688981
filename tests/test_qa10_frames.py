"""Frames QA round 10: exact integer fixed-size lists in to_pandas(), pandas object columns
checked as sample dicts are (sets, text among bytes, ints beyond int64), polars Arrays with a
zero dimension, categorical indices stored as int32, key= naming the index."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import dload_arrow as dl

BIG = 2**53 + 1


def test_integer_fixed_size_lists_with_a_null_cell_stay_exact_in_to_pandas(
        repo: dl.Repository) -> None:
    fsl = pa.array([[BIG, 1], None, [3, 4]], pa.list_(pa.int64(), 2))
    repo.commit("f", pa.table({"__key__": ["a", "b", "c"], "v": fsl,
                               "s": pa.StructArray.from_arrays([fsl], ["v"])}),
                progress=False)
    frame = repo.dataset("f").to_pandas()
    cells = frame["v"].tolist()
    assert cells[0].dtype == np.int64 and cells[0][0] == BIG and cells[1] is None
    assert frame["s"][0]["v"][0] == BIG


def test_pandas_object_columns_are_refused_where_sample_dicts_are(repo: dl.Repository) -> None:
    with pytest.raises(dl.SchemaError, match="column 'tags': row 0 holds a set"):
        repo.commit("s", pd.DataFrame({"k": ["a"], "tags": [{"x", "y"}]}), key="k",
                    progress=False)
    with pytest.raises(dl.SchemaError, match="column 'x': row 1 holds the text 'text' among "
                                             "bytes"):
        repo.commit("b", pd.DataFrame({"k": ["a", "b"], "x": [b"\xff", "text"]}), key="k",
                    progress=False)
    with pytest.raises(dl.SchemaError, match=r"column 'x': a Python int beyond the range of "
                                             r"int64.*astype\('uint64'\)"):
        repo.commit("i", pd.DataFrame({"k": ["a", "b"], "x": [2**64, -1]}), key="k",
                    progress=False)
    with pytest.raises(dl.SchemaError, match="key='id' names the DataFrame's index"):
        repo.commit("ix", pd.DataFrame({"x": [1]}, index=pd.Index([7], name="id")), key="id",
                    progress=False)
    assert repo.datasets() == []


@pytest.mark.parametrize("shape", [(2, 0), (0, 3)])
def test_a_polars_array_with_a_zero_dimension_is_a_schema_error(
        repo: dl.Repository, shape: tuple[int, int]) -> None:
    frame = pl.DataFrame({"k": ["a"], "emb": pl.Series([np.zeros(shape, np.float32)],
                                                       dtype=pl.Array(pl.Float32, shape))})
    with pytest.raises(dl.SchemaError, match=rf"column 'emb': a tensor of shape \({shape[0]}, "
                                             rf"{shape[1]}\) holds nothing"):
        repo.commit("z", frame, key="k", progress=False)


def test_categorical_indices_are_int32_so_appends_may_bring_many_categories(
        repo: dl.Repository) -> None:
    few = pd.DataFrame({"k": ["a", "b"], "split": pd.Categorical(["train", "test"])})
    repo.commit("c", few, key="k", progress=False)
    assert repo.dataset("c").schema.field("split").type.index_type == pa.int32()
    many = pd.DataFrame({"k": [f"n{i}" for i in range(300)],
                         "split": pd.Categorical([f"c{i}" for i in range(300)])})
    repo.append("c", many, key="k", progress=False)
    assert len(repo.dataset("c")) == 302
    ids = {repo.commit(n, f, key="k", progress=False).version
           for n, f in (("p", few), ("q", pl.from_pandas(few)))}
    assert len(repo.dataset("p").to_arrow()) == 2 and len(ids) == 2  # (names differ)
    assert repo.dataset("p").schema == repo.dataset("q").schema


def test_a_frames_tensor_shape_other_than_schemas_is_refused(repo: dl.Repository) -> None:
    schema = pa.schema([pa.field("t", pa.list_(pa.int32(), 4),
                                 metadata={"dload.shape": "[4, 1]"})])
    x = np.array([[1, 2], [3, 4]], np.int32)
    for frame in (pl.DataFrame({"t": pl.Series([x.tolist()], dtype=pl.Array(pl.Int32, (2, 2)))}),
                  pd.DataFrame({"t": [x]})):
        with pytest.raises(dl.SchemaError, match=r"column 't': its tensors have shape \(2, 2\), "
                                                 r"but the schema says \(4, 1\)"):
            repo.commit("d", frame, schema=schema, progress=False)
    repo.commit("d", pd.DataFrame({"t": [x.reshape(4, 1)]}), schema=schema, progress=False)
    assert next(iter(repo.dataset("d").samples()))["t"].shape == (4, 1)


def test_an_ordered_categorical_is_stored_unordered_with_a_warning(repo: dl.Repository) -> None:
    cat = pd.Categorical(["low", "high", "mid"], categories=["low", "mid", "high"], ordered=True)
    with pytest.warns(UserWarning, match="column 'size' is an ordered categorical; Parquet keeps "
                                         "no category order"):
        repo.commit("c", pd.DataFrame({"k": list("abc"), "size": cat}), key="k", progress=False)
    stored = repo.dataset("c").schema.field("size").type
    assert stored.ordered is False and stored.index_type == pa.int32()
    back = repo.dataset("c").to_pandas()["size"]
    assert not back.cat.ordered and back.tolist() == ["low", "high", "mid"]


def test_to_pandas_keeps_the_zone_of_timestamps_in_lists(repo: dl.Repository) -> None:
    import datetime as dt
    from zoneinfo import ZoneInfo

    berlin = ZoneInfo("Europe/Berlin")
    noon = dt.datetime(2024, 1, 1, 12, tzinfo=berlin)
    col = pa.array([[noon], None, []], pa.list_(pa.timestamp("us", tz="Europe/Berlin")))
    repo.commit("z", pa.table({"__key__": ["a", "b", "c"], "whens": col}), progress=False)
    cells = repo.dataset("z").to_pandas()["whens"].tolist()
    assert cells[0][0] == noon and cells[0][0].utcoffset() == dt.timedelta(hours=1)
    assert cells[1] is None and len(cells[2]) == 0
    repo.commit("z2", repo.dataset("z").to_pandas(), key="__key__", progress=False)
    assert repo.dataset("z2").schema.field("whens").type == col.type  # the zone stays


def test_object_column_checks_hold_beside_a_tensor_column(repo: dl.Repository) -> None:
    frame = pd.DataFrame({"k": ["a"], "t": [np.zeros((2, 2), np.float32)], "tags": [{"x", "y"}]})
    with pytest.raises(dl.SchemaError, match="column 'tags': row 0 holds a set"):
        repo.commit("s", frame, key="k", progress=False)
    nested = pd.DataFrame({"k": ["a", "b"], "tags": [[[1]], [[2], {3}]]})
    with pytest.raises(dl.SchemaError, match="column 'tags': row 1 holds a set"):
        repo.commit("n", nested, key="k", progress=False)


def test_an_ordered_categorical_inside_a_list_warns_too(repo: dl.Repository) -> None:
    ordered = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["lo", "hi"]),
                                             ordered=True)
    col = pa.ListArray.from_arrays(pa.array([0, 2]), ordered)
    with pytest.warns(UserWarning, match="column 'l' holds an ordered categorical"):
        repo.commit("n", pa.table({"__key__": ["a"], "l": col}), progress=False)
    assert repo.dataset("n").schema.field("l").type.value_type.ordered is False
