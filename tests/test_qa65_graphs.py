"""QA graphs65: molecules and small graphs. ``pad_collate`` without a stored type (after a
map, a DataLoader's collate_fn) failed with numpy's words on a graph of no edge
(``edge_index`` of shape (2, 0)); a pandas column of (N, 4) node features of several N was
refused with schema= the samples take, and without it told to store them as JSON text."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

import dload_arrow as dl


def test_a_graph_of_no_edge_pads_without_a_stored_type() -> None:
    pc = dl.pad_collate(mask=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (two widths: lists, warned once per column)
        for none, some in (([[], []], [[0, 1], [1, 0]]),
                           (np.zeros((2, 0), np.int64), np.array([[0, 1], [1, 0]])),
                           (torch.zeros((2, 0), dtype=torch.int64), torch.tensor([[0, 1],
                                                                                    [1, 0]]))):
            got = pc([{"ei": none}, {"ei": some}])
            assert isinstance(got["ei"], list) and got["ei_length"].tolist() == [2, 2]
            assert sorted(got) == ["ei", "ei_length", "ei_mask"]
    both = pc([{"ei": np.zeros((2, 0), np.int64)}, {"ei": np.zeros((2, 0), np.int64)}])
    assert both["ei"].shape == (2, 2, 0) and both["ei"].dtype == np.int64
    pipe = dl.from_iterable([{"ei": np.zeros((2, e), np.int64)} for e in (0, 0, 1)]).map(
        lambda r: r).batch(2, collate=pc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, last = list(pipe)
    assert first["ei"].shape == (2, 2, 0) and last["ei"].shape == (1, 2, 1)


def test_pandas_rows_of_frames_of_several_lengths(repo: dl.Repository) -> None:
    xs = [np.arange(n * 4, dtype=np.float32).reshape(n, 4) for n in (3, 1, 0, 2)]
    df = pd.DataFrame({"id": [f"g{i}" for i in range(4)], "x": xs})
    with pytest.raises(dl.SchemaError, match=r"(?s)arrays of 2 dimensions and several shapes .* "
                       r"schema= with 'x' as pa\.list_\(pa\.list_\(pa\.float32\(\), 4\)\)"):
        repo.commit("g", df, key="id")
    schema = pa.schema([("x", pa.list_(pa.list_(pa.float32(), 4)))])
    repo.commit("g", df, key="id", schema=schema)
    ds = repo.dataset("g")
    assert ds.schema.field("x").type == schema.field("x").type
    for i, x in enumerate(xs):
        assert np.array_equal(np.asarray(ds.get(f"g{i}")["x"], np.float32).reshape(-1, 4), x)
    cube = [np.zeros((n, 2, 3), np.float32) for n in (1, 2)]  # three dimensions
    t3 = pa.list_(pa.list_(pa.list_(pa.float32(), 3), 2))
    repo.commit("c", pd.DataFrame({"id": ["a", "b"], "v": cube}), key="id",
                schema=pa.schema([("v", t3)]))
    assert repo.dataset("c").get("b")["v"] == [[[0.0] * 3] * 2] * 2
