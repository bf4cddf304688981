"""where() over time-of-day columns keeps what DuckDB keeps: a time64[ns] column's statistics
are stored exactly, so pruning never drops a row group that holds a match."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dload_arrow import Repository
from dload_arrow.store import shard


def _commit(repo: Repository, name: str, typ: pa.DataType, values: list[Any]) -> Any:
    keys = [f"k{i:02d}" for i in range(len(values))]
    column = pa.array(values, pa.int32() if typ.bit_width == 32 else pa.int64()).cast(typ)
    # one row per row group, so pruning by the manifest's statistics takes part
    repo.commit(name, pa.table({"__key__": keys, "t": column}), row_group_size=2,
                progress=False)
    return repo.dataset(name)


def _sql(repo: Repository, name: str, query: str) -> list[str]:
    return sorted(r["__key__"] for r in repo.sql(
        f"SELECT __key__ FROM samples('{name}') WHERE {query}").to_pylist())


def test_a_row_group_of_nanoseconds_past_a_second_is_not_pruned(repo: Repository) -> None:
    ds = _commit(repo, "one", pa.time64("ns"), [61_000_000_001, 61_000_000_500])
    assert ds.where("t > '00:01:01'").num_rows == 2 == len(_sql(repo, "one", "t > '00:01:01'"))
    maxima = pc.list_flatten(ds.manifest.table["rg_max.t"]).cast(pa.int64()).to_pylist()
    assert max(maxima) == 61_000_000_500  # stored exactly


def test_an_older_manifests_floored_maximum_prunes_nothing_it_should_keep(
        repo: Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    exact = shard._col_stats

    def floored(col: Any) -> tuple[Any, Any, int]:  # as datetime.time took them before
        lo, hi, nulls = exact(col)
        return (lo, hi, nulls) if col.type != pa.time64("ns") else (
            lo // 1000 * 1000, hi // 1000 * 1000, nulls)

    monkeypatch.setattr(shard, "_col_stats", floored)
    ds = _commit(repo, "old", pa.time64("ns"), [61_000_000_001, 61_000_000_500, 61_000_000_000])
    monkeypatch.undo()
    assert ds.manifest.table["rg_max.t"].to_pylist()[0][0] == dt.time(0, 1, 1)  # floored
    for query in ["t > '00:01:01'", "t >= '00:01:01'"]:
        assert sorted(ds.where(query).to_arrow()["__key__"].to_pylist()) == _sql(
            repo, "old", query), query
