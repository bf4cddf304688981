"""Committing sample dicts (the shape ``ds.samples()`` yields), and token lists at speed.

Data is read back with plain pyarrow.parquet over the shards (readback.py).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from readback import read_back

from dload_arrow import Repository, SchemaError

SMALL: dict[str, Any] = {"shard_size": 3000, "row_group_size": 800, "progress": False}


def dicts(n: int, keyed: bool = True) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        d: dict[str, Any] = {"x": i * 3, "s": f"v{i}", "t": np.full((2, 2), i, np.float32)}
        if keyed:
            d["__key__"] = f"k{i:03d}"
        out.append(d)
    return out


def test_dicts_with_keys_round_trip(repo: Repository) -> None:
    repo.commit("d", dicts(50), **SMALL)
    ds = repo.dataset("d")
    got = list(ds.samples())
    assert [s["__key__"] for s in got] == [f"k{i:03d}" for i in range(50)]
    assert [s["x"] for s in got] == [i * 3 for i in range(50)]
    assert ds.schema.names == ["__key__", "x", "s", "t"]
    assert got[7]["t"].shape == (2, 2) and float(got[7]["t"][1, 1]) == 7.0
    # what samples() yields commits again as the same rows: a copy with the same content
    repo.commit("copy", ds.samples(), **SMALL)
    assert read_back(repo, "copy").to_pylist() == read_back(repo, "d").to_pylist()


def test_dicts_without_keys_get_row_numbers_and_appends_continue(repo: Repository) -> None:
    repo.commit("g", dicts(5, keyed=False), **SMALL)
    repo.append("g", dicts(3, keyed=False))
    keys = [s["__key__"] for s in repo.dataset("g").samples()]
    assert keys == [f"{i:012d}" for i in range(8)]


def test_dicts_key_column_and_int_keys(repo: Repository) -> None:
    rows = [{"id": 100 + i, "x": i} for i in range(4)]
    repo.commit("ids", rows, key="id", **SMALL)
    got = list(repo.dataset("ids").samples())
    assert [s["__key__"] for s in got] == ["100", "101", "102", "103"]
    assert "id" not in got[0]  # the key column became the key, as for tables
    with pytest.raises(SchemaError, match=r"sample #0 has no key column 'name'"):
        repo.commit("bad", rows, key="name")


def test_dict_stream_errors_name_the_sample(repo: Repository) -> None:
    mixed = dicts(3) + dicts(1, keyed=False)
    with pytest.raises(SchemaError, match=r"sample #3 lacks a '__key__' column"):
        repo.commit("m", mixed)
    with pytest.raises(SchemaError, match=r"sample #1 .*pass dicts or \(key, dict\) pairs"):
        repo.commit("m", [{"__key__": "a", "x": 1}, ("b", {"x": 2})])
    with pytest.raises(SchemaError, match=r"sample #0: its key \('__key__'\) is None"):
        repo.commit("m", [{"__key__": None, "x": 1}])
    with pytest.raises(SchemaError, match=r"dicts or \(key, dict\) pairs"):
        repo.commit("m", [("a", {"x": 1}), {"__key__": "b", "x": 2}])
    assert repo.datasets() == []  # nothing was published


def test_token_lists_without_pandas_build_through_pyarrow(tmp_path: Any) -> None:
    """A list column's values count element by element against the budget of values built
    from buffers (about 10x slower than pa.array): 300,000 tokens go through pa.array."""
    code = (
        "import sys\n"
        "import pyarrow as pa\n"
        "from dload_arrow import arrays\n"
        "assert 'pandas' not in sys.modules\n"
        "small = arrays.typed_array([[1, 2, 3]] * 10, pa.list_(pa.int64()))\n"
        "print(arrays._budget[0])\n"
        "big = arrays.typed_array([list(range(300_000))], pa.list_(pa.int64()))\n"
        "print(arrays._budget[0])\n"
        "assert big.to_pylist()[0][-1] == 299_999 and small.to_pylist()[9] == [1, 2, 3]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout.split()
    from dload_arrow.arrays import BUFFER_VALUES

    assert int(out[0]) == BUFFER_VALUES - 40  # 10 lists of 3: 40 values
    assert int(out[1]) == int(out[0])  # too many for the budget: pa.array built it


def test_samples_commit_back_to_the_same_id_with_the_schema(repo: Repository) -> None:
    import pyarrow as pa

    table = pa.table({"__key__": ["a", "b"], "i32": pa.array([1, 2], pa.int32()),
                      "u8": pa.array([1, 2], pa.uint8()),
                      "cat": pa.array(["x", "y"]).dictionary_encode()})
    first = repo.commit("rt", table, **SMALL)
    ds = repo.dataset("rt")
    assert repo.commit("rt", ds.samples(), schema=ds.schema, **SMALL).version == first.version
