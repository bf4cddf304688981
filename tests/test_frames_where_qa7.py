"""where() on times and to_pandas() keep every value exact; DataFrame commits name the
column they refuse (QA pass 7).

Found by QA: a time literal lost its nanoseconds against a timestamp[ns] column, and one with
more fractional digits than the column's unit was refused; to_pandas() made an integer list
cell holding a null into floats, failed on lists of fixed-size binary, and gave null and NaN
of one float column the same NaN; a pandas map column raised Arrow's bare ArrowTypeError.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError


def test_an_integer_list_cell_holding_a_null_keeps_exact_integers(repo: Repository) -> None:
    big = 2**53 + 1
    ids = pa.array([[big, None], None, [big, 2]], pa.list_(pa.int64()))
    repo.commit("d", pa.table({"k": ["a", "b", "c"], "ids": ids}), key="k", progress=False)
    cells = repo.dataset("d").to_pandas()["ids"]
    assert list(cells[0]) == [big, None]
    assert cells[1] is None
    assert cells[2].dtype.kind == "i" and cells[2].tolist() == [big, 2]


def test_to_pandas_converts_lists_of_fixed_size_binary(repo: Repository) -> None:
    hashes = pa.array([[b"ab", b"cd"], None], pa.list_(pa.binary(2)))
    repo.commit("d", pa.table({"k": ["a", "b"], "h": hashes}), key="k", progress=False)
    cells = repo.dataset("d").to_pandas()["h"]
    assert list(cells[0]) == [b"ab", b"cd"] and cells[1] is None


def test_a_float_column_with_null_and_nan_tells_them_apart(repo: Repository) -> None:
    scores = pa.array([float("nan"), None, 1.5])
    repo.commit("d", pa.table({"k": ["a", "b", "c"], "score": scores,
                               "only_nan": [float("nan"), 1.0, 2.0]}), key="k", progress=False)
    df = repo.dataset("d").to_pandas()
    assert df["score"].dtype == pd.Float64Dtype()
    assert df["score"].isna().tolist() == [False, True, False]
    assert df["score"][2] == 1.5
    assert df["only_nan"].dtype == "float64"


def test_a_pandas_map_column_is_refused_naming_the_column_and_the_fix(
        repo: Repository) -> None:
    df = pd.DataFrame({"k": ["a"], "m": [[("x", 1)]]})
    with pytest.raises(SchemaError, match=r"column 'm': value \[\('x', 1\)\] is not a value "
                                          r"Arrow can store.*pa\.map_"):
        repo.commit("d", df, key="k", progress=False)
