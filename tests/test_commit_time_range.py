"""A commit refuses dates and timestamps outside years 1-9999 (QA: a date32 after 9999-12-31
failed with a bare OverflowError in the shard statistics; a timestamp[s] after it committed,
then describe() crashed on it)."""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError


@pytest.mark.parametrize(("typ", "value", "when"), [
    (pa.date32(), 2_932_897, "10000-01-01"),
    (pa.date32(), -719_163, "0000-12-31"),
    (pa.date64(), 253_402_300_800_000, "10000-01-01T00:00:00.000"),
    (pa.timestamp("s"), 253_402_300_800, "10000-01-01T00:00:00"),
    (pa.timestamp("ms", "Europe/Berlin"), -62_135_596_800_001, "0000-12-31T23:59:59.999"),
    (pa.timestamp("us"), 253_402_300_800_000_000, "10000-01-01T00:00:00.000000"),
])
def test_a_time_outside_years_1_to_9999_is_refused_naming_the_column(
        repo: Repository, typ: pa.DataType, value: int, when: str) -> None:
    table = pa.table({"__key__": ["a", "b", "c"], "when": pa.array([0, None, value], typ)})
    head = re.escape(f"column 'when' ({typ}) holds {when} ({value} ")
    with pytest.raises(SchemaError, match=head + r"\w+ after 1970-01-01\), outside years 1-9999"
                                                 r".*int64"):
        repo.commit("t", table, progress=False)
    assert "t" not in repo.datasets()


def test_the_first_and_last_times_of_years_1_to_9999_commit(repo: Repository) -> None:
    dates = pa.array([-719_162, 2_932_896, None], pa.date32())
    stamps = pa.array([-62_135_596_800_000_000, 253_402_300_799_999_999, None],
                      pa.timestamp("us", "UTC"))
    repo.commit("t", pa.table({"__key__": ["a", "b", "c"], "d": dates, "s": stamps}),
                progress=False)
    ds = repo.dataset("t")
    assert ds.to_arrow()["d"].to_pylist() == [dt.date(1, 1, 1), dt.date(9999, 12, 31), None]
    described = ds.describe()
    assert described is not None


_LATE = dt.datetime(9999, 12, 31, 23, 59, 59)
_D = pa.date32()


@pytest.mark.parametrize(("column", "path"), [
    (pa.array([[0], None, [1, 2_932_897]], pa.list_(_D)), "when[]"),
    (pa.array([[0], [2_932_897]], pa.large_list(_D)), "when[]"),
    (pa.array([[0], [2_932_897]], pa.list_(_D, 1)), "when[]"),
    (pa.array([{"d": 0}, {"d": 2_932_897}], pa.struct([("d", _D)])), "when.d"),
    (pa.array([[{"d": 2_932_897}]], pa.list_(pa.struct([("d", _D)]))), "when[].d"),
    (pa.array([[(2_932_897, 1)]], pa.map_(_D, pa.int64())), "when[].key"),
    (pa.array([[("k", 2_932_897)]], pa.map_(pa.string(), _D)), "when[].value"),
])
def test_a_time_outside_years_1_to_9999_nested_in_a_column_is_refused_naming_its_path(
        repo: Repository, column: pa.Array, path: str) -> None:
    n = len(column)
    table = pa.table({"__key__": [f"k{i}" for i in range(n)], "when": column})
    with pytest.raises(SchemaError, match=re.escape(f"column {path!r} (date32[day]) holds "
                                                    "10000-01-01 (2932897 days after")):
        repo.commit("t", table, progress=False)
    assert "t" not in repo.datasets()


def test_nested_times_within_years_1_to_9999_commit_and_read_back(repo: Repository) -> None:
    # a null struct's child may hold anything: it is never read back, so it is not checked
    hidden = pa.StructArray.from_arrays(
        [pa.array([0, 253_402_300_800], pa.timestamp("s"))], names=["t"],
        mask=pa.array([False, True]))
    table = pa.table({
        "__key__": ["a", "b"],
        "s": hidden,
        "l": pa.array([[_LATE], [dt.datetime(1, 1, 1)]], pa.list_(pa.timestamp("us"))),
        # a slice's values before its offset are not its own (MapArray.keys would show them)
        "m": pa.array([[("k", 2_932_897)], [("k", 2_932_896)], None],
                      pa.map_(pa.string(), _D)).slice(1),
    })
    repo.commit("t", table, progress=False)
    got = repo.dataset("t").to_arrow().sort_by("__key__")
    assert got["s"].to_pylist() == [{"t": dt.datetime(1970, 1, 1)}, None]
    assert got["l"].to_pylist() == [[_LATE], [dt.datetime(1, 1, 1)]]
    assert got["m"].to_pylist() == [[("k", dt.date(9999, 12, 31))], None]
