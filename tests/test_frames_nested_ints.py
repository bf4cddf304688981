"""to_pandas() keeps integers exact at any depth of a struct, map or list when a null is
present (QA: Arrow converted such a child to float64, so 2**60 + 1 read as 1.15e18)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dload_arrow import Repository

BIG = 2**60 + 1


def _commit(repo: Repository, **columns: pa.Array) -> None:
    keys = [f"k{i}" for i in range(len(next(iter(columns.values()))))]
    repo.commit("s", pa.table({"__key__": keys, **columns}), progress=False)


def test_a_struct_integer_with_a_null_stays_exact(repo: Repository) -> None:
    st = pa.array([{"a": BIG, "b": "x"}, {"a": None, "b": "y"}, None],
                  pa.struct([("a", pa.int64()), ("b", pa.string())]))
    _commit(repo, st=st)
    assert repo.dataset("s").to_pandas()["st"].tolist() == [
        {"a": BIG, "b": "x"}, {"a": None, "b": "y"}, None]


def test_a_map_value_or_key_with_a_null_stays_exact(repo: Repository) -> None:
    mp = pa.array([[("x", BIG)], [("y", None), ("z", 3)], None],
                  pa.map_(pa.string(), pa.int64()))
    keyed = pa.array([[(BIG, None)], [(2**64 - 1, 1.5)], []], pa.map_(pa.uint64(), pa.float64()))
    _commit(repo, mp=mp, keyed=keyed)
    df = repo.dataset("s").to_pandas()
    assert df["mp"].tolist() == [[("x", BIG)], [("y", None), ("z", 3)], None]
    # no null among the integers: Arrow's own conversion, unchanged
    assert df["keyed"][1] == [(2**64 - 1, 1.5)]


def test_lists_of_lists_and_lists_of_structs_stay_exact(repo: Repository) -> None:
    ll = pa.array([[[BIG]], [[None, 2], None, []], None], pa.list_(pa.list_(pa.int64())))
    ls = pa.array([[{"a": BIG}], [{"a": None}], []], pa.list_(pa.struct([("a", pa.uint64())])))
    _commit(repo, ll=ll, ls=ls)
    df = repo.dataset("s").to_pandas()
    first, second = df["ll"][0], df["ll"][1]
    assert first[0].dtype == np.int64 and first[0].tolist() == [BIG]  # no null: integers
    assert list(second[0]) == [None, 2] and second[1] is None and len(second[2]) == 0
    assert df["ll"][2] is None
    assert [list(c) for c in df["ls"]] == [[{"a": BIG}], [{"a": None}], []]


def test_a_struct_holding_a_list_with_a_null_stays_exact(repo: Repository) -> None:
    st = pa.array([{"l": [BIG, None], "n": 1}, {"l": None, "n": None}],
                  pa.struct([("l", pa.list_(pa.int64())), ("n", pa.int32())]))
    _commit(repo, st=st)
    cells = repo.dataset("s").to_pandas()["st"]
    assert list(cells[0]["l"]) == [BIG, None] and cells[0]["n"] == 1
    assert cells[1] == {"l": None, "n": None}
    # the where() view and the arrow table agree cell for cell
    arrow = repo.dataset("s").where("__key__ = 'k0'").to_arrow()["st"].to_pylist()
    frame = repo.dataset("s").where("__key__ = 'k0'").to_pandas()["st"].tolist()
    assert [{**c, "l": list(c["l"])} for c in frame] == arrow
