"""QA embed65, an embeddings store: float32 vectors (an encoder's) refused by a float16 column
("store a wider type") while float64 ones were rounded; a torch tensor refused with 3.7 KB of
its values and JSON text as the advice; a vector of another length into a fixed-size list
column told to store a wider type."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import torch

import dload_arrow as dl


def test_float32_values_into_a_float16_column(repo: dl.Repository) -> None:
    x = np.array([0.5, 1.0, -2.0, 0.1], np.float32)
    repo.commit("e16", [("a", {"emb": np.zeros(4, np.float16), "s": np.float16(0)})])
    repo.append("e16", [("b", {"emb": x, "s": np.float32(0.1)})])
    got = repo.dataset("e16").get("b")
    assert got["emb"].dtype == np.float16 and got["emb"].tolist() == x.astype(np.float16).tolist()
    assert got["s"] == float(np.float16(0.1))
    repo.commit("s16", [("a", {"emb": x})], schema=pa.schema([("emb", pa.list_(pa.float16()))]))
    assert repo.dataset("s16").get("a")["emb"] == x.astype(np.float16).tolist()
    with pytest.raises(dl.SchemaError, match="beyond the range of float16"):
        repo.append("e16", [("c", {"emb": np.array([1e30, 0, 0, 0], np.float32), "s": 0.0})])


def test_a_torch_tensor_sample_says_numpy() -> None:
    import tempfile

    repo = dl.Repository.open(tempfile.mkdtemp())
    with pytest.raises(dl.SchemaError, match=r"is a torch tensor.* t\.detach\(\)\.cpu\(\)\."
                                             r"numpy\(\)") as e:
        repo.commit("e", [("a", {"emb": torch.zeros(768)})])
    assert len(str(e.value)) < 600 and "json" not in str(e.value)


def test_a_vector_of_another_length(repo: dl.Repository) -> None:
    emb = np.random.default_rng(0).standard_normal((4, 384)).astype(np.float32)
    repo.commit("e", pl.DataFrame({"key": list("abcd"), "emb": emb}), key="key")
    with pytest.raises(dl.SchemaError, match=r"a vector of length 768, but the column holds "
                                             r"vectors of length 384"):
        repo.append("e", [("x", {"emb": np.zeros(768, np.float32)})])
    with pytest.raises(dl.SchemaError, match=r"the stored type of an append.*v\.reshape\(-1\)"):
        repo.append("e", [("x", {"emb": np.zeros((1, 384), np.float32)})])
    repo.append("e", [("x", {"emb": np.ones(384, np.float32)})])
    assert repo.dataset("e").get("x")["emb"] == [1.0] * 384
