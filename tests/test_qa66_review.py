"""QA review66, a review of stop 55's last fixes: an append of nested list views into a list
view of lists lost its values (``[[5, 6]]`` stored as ``[[]]``) or crashed the process, and
nested view-to-view changes were refused with Arrow's internals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import dload_arrow as dl

LV, LLV, L, LL = pa.list_view, pa.large_list_view, pa.list_, pa.large_list
i64, i32 = pa.int64(), pa.int32()


@pytest.mark.parametrize(("stored", "first", "appended", "rows"), [
    (LV(L(i64)), [[[0]]], LLV(LLV(i64)), [[[5, 6]], [[7]], None, [[8, 9], []]]),
    (LV(L(i64)), [[[0]]], LV(LV(i64)), [[[5, 6]]]),
    (pa.struct([("a", LV(i64))]), [{"a": [0]}], pa.struct([("a", LV(i32))]), [{"a": [5]}]),
    (LV(pa.struct([("a", L(i64))])), [[{"a": [0]}]], LV(pa.struct([("a", LV(i64))])),
     [[{"a": [5, 6]}, {"a": [7]}]]),
    (LLV(L(i64)), [[[0]]], LV(LV(i64)), [[[5, 6]], [[7]]]),
    (LV(LL(i64)), [[[0]]], LV(LV(i64)), [[[5, 6]], [[7]]]),
    (L(LV(i64)), [[[0]]], L(LV(i32)), [[[5, 6]], [[7]]]),
])
def test_nested_list_views_append_with_their_values(
        tmp_path: Path, stored: pa.DataType, first: list[Any], appended: pa.DataType,
        rows: list[Any]) -> None:
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    repo.commit("x", pa.table({"__key__": ["0"], "c": pa.array(first, stored)}))
    new = pa.array(rows, appended)
    repo.append("x", pa.table({"__key__": [f"k{i}" for i in range(len(rows))], "c": new}))
    got = [s["c"] for s in dl.Repository.open(str(tmp_path / "r"), cache_dir=str(
        tmp_path / "c2")).dataset("x").samples()]
    assert got == first + rows
    sliced = new.slice(1)  # (a view's offsets point into its whole child)
    if not len(sliced):
        return
    repo.append("x", pa.table({"__key__": [f"s{i}" for i in range(len(sliced))], "c": sliced}))
    assert [s["c"] for s in repo.dataset("x").samples()][len(got):] == rows[1:]
