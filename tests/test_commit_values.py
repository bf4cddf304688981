"""Values a column cannot hold are refused at commit, never stored changed.

Found by a QA pass: floats with a fraction were truncated into integer columns (2.5 stored as
2) when the column's type was already fixed (after the first 1,024 samples, by ``schema=``, or
by the version appended to); a zero-size tensor committed but made the dataset unreadable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dload_arrow import NotFoundError, Repository, SchemaError

_INTS = [(f"k{i:05d}", {"x": 1}) for i in range(1100)]  # past the 1,024 samples inferred


@pytest.mark.parametrize(("rows", "kw"), [
    ([*_INTS, ("z", {"x": 2.5})], {}),
    ([*_INTS, ("z", {"x": np.float32(3.9)})], {}),
    ([*_INTS, ("z", {"x": -0.5})], {}),
    ([("z", {"x": 2.7})], {"schema": pa.schema([("x", pa.int64())])}),
    ([("a", {"x": np.zeros(3, np.uint8)}), ("z", {"x": np.array([0.5, 1.7, 2.2])})], {}),
    ([("a", {"x": [1, 2]}), ("z", {"x": [1.5, 2]})],
     {"schema": pa.schema([("x", pa.list_(pa.int64()))])}),
])
def test_a_float_with_a_fraction_is_refused_by_an_integer_column(
        repo: Repository, rows: list[tuple[str, dict[str, Any]]], kw: dict[str, Any]) -> None:
    with pytest.raises(SchemaError, match=r"sample 'z', column 'x'.*fraction"):
        repo.commit("d", rows, progress=False, **kw)
    with pytest.raises(NotFoundError):
        repo.dataset("d")  # nothing was published


def test_append_refuses_a_float_with_a_fraction(repo: Repository) -> None:
    repo.commit("d", [("a", {"x": 1})], progress=False)
    with pytest.raises(SchemaError, match="sample 'z', column 'x'"):
        repo.append("d", [("z", {"x": 2.7})], progress=False)
    assert repo.dataset("d").num_rows == 1


def test_whole_floats_are_stored_as_the_integers_they_are(repo: Repository) -> None:
    repo.commit("d", [*_INTS, ("z", {"x": 3.0}), ("m", {"x": -2.0})], progress=False)
    ds = repo.dataset("d")
    assert ds.get("z")["x"] == 3 and ds.get("m")["x"] == -2
    repo.commit("t", [("a", {"x": np.zeros(3, np.uint8)}), ("b", {"x": np.array([1.0, 2, 3])})],
                progress=False)
    assert repo.dataset("t").get("b")["x"].tolist() == [1, 2, 3]


# Each example commits a new version of the same dataset (or nothing): sharing is harmless.
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_a_late_float_is_stored_exactly_or_refused(repo: Repository, f: float) -> None:
    rows = [*_INTS, ("z", {"x": f})]
    if f.is_integer():
        repo.commit("d", rows, progress=False)
        got = repo.dataset("d").get("z")["x"]
        assert got == f and isinstance(got, int)
    else:
        with pytest.raises(SchemaError):
            repo.commit("d", rows, progress=False)


@pytest.mark.parametrize(("value", "match"), [
    (np.zeros((0, 3)), r"shape \(0, 3\) holds no element"),
    (np.array(["a", "b"], dtype=object), "dtype object"),
    (2**70, "outside the range of a signed 64-bit integer"),
])
def test_values_no_column_can_hold_are_refused_naming_the_sample(
        repo: Repository, value: Any, match: str) -> None:
    with pytest.raises(SchemaError, match=match) as err:
        repo.commit("d", [("a", {"x": 1 if isinstance(value, int) else value}),
                          ("b", {"x": value})] if isinstance(value, int) else [("b", {"x": value})],
                    progress=False)
    assert "sample 'b', column 'x'" in str(err.value)


@pytest.mark.parametrize(("value", "other", "match"), [
    ([2**64], [1], r"integer 18446744073709551616 \(inside a list or dict\) .*\(no integer "
                   r"column holds it"),
    ([1, 2**63], [1], r"pa\.list_\(pa\.uint64\(\)\)"),
    ({"a": [2**63]}, {"a": [-1]}, "sample 'o' has -1, a negative value"),
])
def test_a_nested_int_beyond_int64_is_refused_as_a_top_level_one_is(
        repo: Repository, value: Any, other: Any, match: str) -> None:
    with pytest.raises(SchemaError, match=match) as err:
        repo.commit("d", [("o", {"x": other}), ("b", {"x": value})], progress=False)
    assert "sample 'b', column 'x'" in str(err.value)
    if value == [1, 2**63]:  # the fix the message gives works
        repo.commit("d", [("b", {"x": value})], progress=False,
                    schema=pa.schema([("x", pa.list_(pa.uint64()))]))
        assert repo.dataset("d").get("b")["x"] == value


def test_a_polars_lazyframe_is_collected_and_committed(repo: Repository) -> None:
    import polars as pl

    lazy = pl.DataFrame({"id": ["a", "b"], "x": [1, 2]}).lazy().filter(pl.col("x") > 1)
    v = repo.commit("d", lazy, key="id", progress=False)
    assert v.num_rows == 1 and repo.dataset("d").get("b")["x"] == 2


def test_a_table_with_a_key_column_and_another_key_is_ambiguous(repo: Repository) -> None:
    table = pa.table({"__key__": ["a", "b"], "id": ["x", "y"], "v": [1, 2]})
    with pytest.raises(SchemaError, match="which is the key"):
        repo.commit("d", table, key="id", progress=False)
    assert repo.commit("d", table, progress=False).num_rows == 2  # __key__ is the key


def test_meta_that_json_cannot_hold_is_a_config_error(repo: Repository) -> None:
    from dload_arrow import ConfigError

    with pytest.raises(ConfigError, match="JSON-serialisable"):
        repo.commit("d", [("a", {"x": 1})], meta={"o": object()}, progress=False)


def test_no_progress_bar_by_default_when_stderr_is_not_a_terminal(
        repo: Repository, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(100)])
    repo.pull("d")
    assert capsys.readouterr().err == ""
    repo.commit("e", [(f"k{i}", {"x": i}) for i in range(100)], progress=True)
    assert "commit e" in capsys.readouterr().err  # asked for: drawn anyway


def test_a_bad_root_or_budget_is_refused_at_open(tmp_path: Path) -> None:
    from dload_arrow import ConfigError, StorageError

    f = tmp_path / "file.txt"
    f.write_text("not a root")
    with pytest.raises(StorageError, match="is a file, not a directory"):
        Repository.open(f, cache_dir=tmp_path / "c")
    for bad in ("lots", "-1"):
        with pytest.raises(ConfigError, match="cache budget"):
            Repository.open(tmp_path / "r", cache_dir=tmp_path / "c", cache_budget=bad)


def test_a_pandas_index_with_data_is_not_dropped_silently(repo: Repository) -> None:
    import pandas as pd

    with pytest.warns(UserWarning, match=r"index \(Index\) is not stored.*reset_index"):
        repo.commit("d", pd.DataFrame({"x": [1, 2]}, index=["a", "b"]), progress=False)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.commit("e", pd.DataFrame({"x": [1, 2]}), progress=False)  # 0..n-1: nothing lost
        frame = pd.DataFrame({"k": ["a", "b"], "x": [1, 2]}).set_index("k").reset_index()
        repo.commit("f", frame, key="k", progress=False)
    assert repo.dataset("f").get("b")["x"] == 2
