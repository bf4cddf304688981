"""QA recsys63: a recommender team's data. pad_collate(columns=...) leaves the other columns
as batch() gives them (a fixed-size embedding an (n, 64) array); rows holding None after a
map are padded as stored ones; a pandas categorical whose codes change on reading is warned;
a list column of ids past int64 gets advice that works."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import Repository
from dload_arrow.errors import SchemaError


def test_pad_collate_columns_keeps_an_embedding_an_array(repo: Repository) -> None:
    emb = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    df = pl.DataFrame({"emb": pl.Series(list(emb), dtype=pl.Array(pl.Float32, 8)),
                       "hist": pl.Series([[1, 2], [], None, [3]], dtype=pl.List(pl.Int64))})
    repo.commit("inter", df, progress=False)
    pipe = repo.dataset("inter").pipeline()
    got = next(iter(pipe.batch(4, collate=dl.pad_collate(columns=["hist"]))))
    assert isinstance(got["emb"], np.ndarray) and got["emb"].dtype == np.float32
    np.testing.assert_array_equal(got["emb"], emb)
    assert got["hist"].tolist() == [[1, 2], [0, 0], [0, 0], [3, 0]]
    assert got["hist_length"].tolist() == [2, 0, 0, 1] and list(got)[:2] == ["__key__", "emb"]
    plain = next(iter(pipe.batch(4)))
    assert list(plain) == ["__key__", "emb", "hist"] and plain["emb"].shape == (4, 8)


def test_rows_holding_none_after_a_map_are_padded(repo: Repository) -> None:
    rows = [{"hist": [7, None]}, {"hist": []}, {"hist": [3]}]
    got = next(iter(dl.from_iterable(rows).batch(3, collate=dl.pad_collate(mask=True))))
    assert got["hist"].tolist() == [[7, 0], [0, 0], [3, 0]]
    assert got["hist_length"].tolist() == [2, 0, 1]
    assert got["hist_mask"].tolist() == [[True, False], [False, False], [True, False]]
    repo.commit("h", pa.table({"__key__": ["a", "b", "c"], "hist": pa.array(
        [[7, None], [], [3]], pa.list_(pa.int64()))}), progress=False)
    pipe = repo.dataset("h").pipeline()
    stored = next(iter(pipe.batch(3, collate=dl.pad_collate())))
    mapped = next(iter(pipe.map(lambda r: {"hist": r["hist"]}).batch(
        3, collate=dl.pad_collate())))
    assert mapped["hist"].tolist() == stored["hist"].tolist()
    assert mapped["hist_length"].tolist() == stored["hist_length"].tolist()


def test_categorical_codes_that_change_are_warned(repo: Repository) -> None:
    df = pd.DataFrame({"c": pd.Categorical(["sports", "news", "music", "news"],
                                           categories=["music", "news", "sports", "unused"])})
    with pytest.warns(UserWarning, match=r"\.cat\.codes\) change"):
        repo.commit("c", df, progress=False)
    back = repo.dataset("c").to_pandas()["c"]
    assert back.tolist() == df["c"].tolist()  # the values exact, the codes not: warned
    assert back.cat.codes.tolist() != df["c"].cat.codes.tolist()
    with pytest.warns(UserWarning, match=r"\.cat\.codes\) change"):  # pandas sorts them
        repo.commit("s", pd.DataFrame({"c": pd.Series(["b", "a"]).astype("category")}),
                    progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # in the order values appear: nothing changes
        repo.commit("a", pd.DataFrame({"c": pd.Categorical(["b", "a", "b"],
                                                           categories=["b", "a"])}),
                    progress=False)
        repo.commit("p", pl.DataFrame({"c": pl.Series(["b", "a", "b"], dtype=pl.Categorical)}),
                    progress=False)
    assert repo.dataset("a").to_pandas()["c"].cat.categories.tolist() == ["b", "a"]


def test_a_list_of_ids_past_int64_gets_advice_that_works(repo: Repository) -> None:
    df = pd.DataFrame({"hist": [[2**63 + 5, 1], [], None, [2**64 - 1]]})
    with pytest.raises(SchemaError, match=r"schema=pa\.schema\(\[\('hist', pa\.list_\(pa\."
                       r"uint64\(\)\)\)\]\)") as e:
        repo.commit("h", df, progress=False)
    assert "astype('uint64')" not in str(e.value)
    repo.commit("h", df, schema=pa.schema([("hist", pa.list_(pa.uint64()))]), progress=False)
    assert repo.dataset("h").to_arrow().column("hist").to_pylist() == df["hist"].tolist()
    with pytest.raises(SchemaError, match=r"astype\('uint64'\)"):  # a flat column: astype
        repo.commit("f", pd.DataFrame({"id": [2**63 + 5, 1]}, dtype=object), progress=False)
