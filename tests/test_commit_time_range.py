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
