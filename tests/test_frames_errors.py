"""to_pandas() of a column pandas cannot hold names the column and what reads it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError


def test_a_time_of_day_with_nanoseconds_is_named(repo: Repository) -> None:
    t = pa.array([2_000_000_002, None], pa.time64("ns"))
    repo.commit("t", pa.table({"__key__": ["a", "b"], "t": t, "n": [1, 2]}), progress=False)
    ds = repo.dataset("t")
    with pytest.raises(SchemaError, match=r"column 't' \(time64\[ns\]\) holds values pandas"):
        ds.to_pandas()
    assert ds.to_pandas(columns=["n"])["n"].tolist() == [1, 2]  # the way round it
    assert ds.to_arrow()["t"].cast(pa.int64()).to_pylist() == [2_000_000_002, None]
