"""where() over time-of-day columns keeps what DuckDB keeps: a time64[ns] column to the
nanosecond (literals read to 9 digits, statistics stored exactly, so pruning never drops a
matching row group), the other time types as DuckDB's TIME reads them (to the microsecond)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dload_arrow import PredicateError, Repository
from dload_arrow.catalog.filtering import compile_filter
from dload_arrow.store import shard

NS = [61_000_000_001, 61_000_000_500, 61_000_000_000, 61_000_001_000, 61_000_999_999,
      61_001_000_000, 61_123_456_789, None, 0, 86_399_999_999_999, 60_999_999_999]
LITERALS = ["00:01:01", "00:01:01.000", "00:01:01.001", "00:01:01.123", "00:01:01.000000",
            "00:01:01.000001", "00:01:01.123456", "00:01:01.000000500", "00:01:01.000000001",
            "00:01:01.123456789", "00:01:01.000999999", "23:59:59.999999999"]
OPS = ["=", "!=", "<", "<=", ">", ">="]
QUERIES = [f"t {op} '{lit}'" for op in OPS for lit in LITERALS] + [
    "t BETWEEN '00:01:01.000000001' AND '00:01:01.000000500'",
    "t BETWEEN '00:01:01.000000002' AND '00:01:01.001'",
    "t NOT BETWEEN '00:01:01' AND '00:01:01.000999'",
    "t IN ('00:01:01.000000001', '00:01:01.123456789', '00:01:01.123')",
    "t NOT IN ('00:01:01.000000500', '00:01:01')",
    "t IN ('00:01:01.000000001', NULL)",
    "NOT t > '00:01:01.000000001' OR t = '00:01:01.000999999'",
]


def _commit(repo: Repository, name: str, typ: pa.DataType, values: list[Any]) -> Any:
    keys = [f"k{i:02d}" for i in range(len(values))]
    column = pa.array(values, pa.int32() if typ.bit_width == 32 else pa.int64()).cast(typ)
    # one row per row group, so pruning by the manifest's statistics takes part
    repo.commit(name, pa.table({"__key__": keys, "t": column}), row_group_size=2,
                progress=False)
    return repo.dataset(name)


def _check(repo: Repository, ds: Any, name: str, query: str) -> None:
    sql = sorted(r["__key__"] for r in repo.sql(
        f"SELECT __key__ FROM samples('{name}') WHERE {query}").to_pylist())
    view = ds.where(query)
    assert sorted(view.to_arrow()["__key__"].to_pylist()) == sql, query  # pruning, row masks
    assert sorted(view.to_polars().collect()["__key__"].to_list()) == sql, query
    table = ds.to_arrow()  # the Arrow expression, over every row
    expression = compile_filter(query, ds.schema).expression
    assert sorted(table.filter(expression)["__key__"].to_pylist()) == sql, query


@pytest.fixture
def ns(repo: Repository) -> Any:
    return _commit(repo, "ns", pa.time64("ns"), NS)


@pytest.mark.parametrize("query", QUERIES)
def test_a_nanosecond_time_column_keeps_the_rows_duckdb_keeps(repo: Repository, ns: Any,
                                                             query: str) -> None:
    _check(repo, ns, "ns", query)


def test_a_row_group_of_nanoseconds_past_a_second_is_not_pruned(repo: Repository) -> None:
    ds = _commit(repo, "one", pa.time64("ns"), [61_000_000_001, 61_000_000_500])
    assert ds.where("t > '00:01:01'").num_rows == 2
    assert ds.where("t = '00:01:01.000000500'").to_arrow()["__key__"].to_pylist() == ["k01"]
    assert ds.where("t < '00:01:01.000000500'").to_arrow()["__key__"].to_pylist() == ["k00"]
    maxima = pc.list_flatten(ds.manifest.table["rg_max.t"]).cast(pa.int64()).to_pylist()
    assert max(maxima) == 61_000_000_500  # stored exactly


def test_an_older_manifests_floored_maximum_prunes_nothing_it_should_keep(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    exact = shard.column_bounds

    def floored(col: Any, **kw: Any) -> tuple[Any, Any, int]:  # as datetime.time took them
        lo, hi, nulls = exact(col, **kw)
        return (lo, hi, nulls) if col.type != pa.time64("ns") else (
            lo // 1000 * 1000, hi // 1000 * 1000, nulls)

    monkeypatch.setattr(shard, "column_bounds", floored)
    ds = _commit(repo, "old", pa.time64("ns"), [61_000_000_001, 61_000_000_500, 61_000_000_000])
    monkeypatch.undo()
    assert ds.manifest.table["rg_max.t"].to_pylist()[0][0] == dt.time(0, 1, 1)  # floored
    for query in ["t > '00:01:01'", "t = '00:01:01.000000500'", "t >= '00:01:01.000000001'"]:
        _check(repo, ds, "old", query)
    assert ds.where("t > '00:01:01.000001'").pruning["units_read"] == 0


@pytest.mark.parametrize("typ", [pa.time64("us"), pa.time32("ms"), pa.time32("s")])
def test_coarser_time_columns_read_literals_to_the_microsecond_as_duckdb(
        repo: Repository, typ: pa.DataType) -> None:
    per = {"us": 1000, "ms": 10**6, "s": 10**9}[typ.unit]
    values = [v if v is None else v // per for v in NS]
    ds = _commit(repo, "c", typ, values)
    lits = [*LITERALS, "00:01:01.0000005", "00:01:01.0009999", "00:01:01.5", "00:01:02"]
    queries = [f"t {op} '{lit}'" for op in OPS for lit in lits] + [
        "t BETWEEN '00:01:01.0000001' AND '00:01:01.001'", "t IN ('00:01:01.0000009')"]
    for query in queries:
        _check(repo, ds, "c", query)


@pytest.mark.parametrize("literal", ["12:00+01:00", "12:00Z", "12:00:00+00:00",
                                     "12:00:00.5-0130", "11:00-01"])
@pytest.mark.parametrize("query", ["t = '{}'", "t < '{}'", "t IN ('10:00', '{}')",
                                   "t BETWEEN '{}' AND '13:00'"])
def test_a_time_of_day_with_a_zone_offset_is_refused_as_duckdb_refuses_it(
        repo: Repository, literal: str, query: str) -> None:
    ds = _commit(repo, "tz", pa.time64("us"), [39_600_000_000, 43_200_000_000, None])
    text = query.format(literal)
    with pytest.raises(PredicateError) as info:
        ds.where(text)  # the same node feeds to_arrow, to_polars and the Arrow expression
    message = str(info.value)
    assert f"{literal!r}" in message and "column 't'" in message, message
    assert "without an offset" in message, message
    with pytest.raises(PredicateError):
        compile_filter(text, ds.schema)
    if literal.count(":") == 1 or literal.endswith("Z"):  # DuckDB refuses 'HH:MM+zone' (it
        # drops the offset of 'HH:MM:SS+zone' unread: where() refuses both)
        with pytest.raises(Exception, match="time field value out of range"):
            repo.sql(f"SELECT __key__ FROM samples('tz') WHERE {text}")
    assert ds.where("t = '12:00'").to_arrow()["__key__"].to_pylist() == ["k01"]
