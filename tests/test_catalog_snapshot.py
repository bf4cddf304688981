"""samples() in SQL reads what the catalog's views list, whatever the paths and commits around.

QA findings: a folder named like ``x=1`` above the root (or the cache) was read by DuckDB as a
Hive partition, replacing a column's values or adding a column; a commit landing between the
catalog's listing and a ``samples()`` call's ref read gave "not stored (was it removed?)" for
a version committed a moment ago, or rows of a newer version than the ``datasets`` view's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from dload_arrow import Repository


def _table(lo: int, hi: int) -> pa.Table:
    return pa.table({"k": [f"k{i:04d}" for i in range(lo, hi)], "x": list(range(lo, hi))})


@pytest.mark.parametrize("folder", ["x=1", "run=7"])
def test_folders_named_like_partitions_are_not_read_as_columns(tmp_path: Path,
                                                               folder: str) -> None:
    repo = Repository.open(tmp_path / folder / "root", cache_dir=tmp_path / folder / "cache")
    repo.commit("d", _table(0, 3), key="k", progress=False)
    got = repo.sql("select * from samples('d') order by __key__")
    assert got.column_names == ["__key__", "x"]
    assert got.column("x").to_pylist() == [0, 1, 2]
    assert repo.sql("select count(*) as n from samples('d') where x = 0").to_pylist() == [{"n": 1}]


def _commit_after_each_listing(repo: Repository, other: Repository, times: int) -> list[int]:
    """Make another writer append one row right after each of the next ``times`` listings of
    ``repo``'s catalog (a real commit through a second Repository)."""
    snapshotter = repo.catalog.snapshotter
    real = snapshotter.snapshot
    done: list[int] = []

    def snapshot(**kwargs: Any) -> Any:
        snap = real(**kwargs)
        if len(done) < times:
            n = len(other.dataset("d"))
            other.append("d", _table(n, n + 1), key="k", progress=False)
            done.append(n + 1)
        return snap

    snapshotter.snapshot = snapshot  # type: ignore[method-assign]
    return done


QUERY = ("select (select count(*) from samples('d')) as counted, "
         "(select num_rows from datasets where name = 'd') as listed")


@pytest.mark.parametrize("commits", [1, 2, 10])
def test_a_commit_during_a_query_reads_the_listed_version(tmp_path: Path, commits: int) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", _table(0, 10), key="k", progress=False)
    other = Repository.open(tmp_path / "root", cache_dir=tmp_path / "other")
    done = _commit_after_each_listing(repo, other, commits)
    row = repo.sql(QUERY).to_pylist()[0]
    assert done  # the other writer did commit during the query
    assert row["counted"] == row["listed"] >= 10
    done.extend([0] * commits)  # no more commits: the next query sees the newest
    row = repo.sql(QUERY).to_pylist()[0]
    assert row["counted"] == row["listed"] == len(other.dataset("d"))


def test_an_explicit_version_stays_that_version(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    first = repo.commit("d", _table(0, 10), key="k", progress=False).version
    other = Repository.open(tmp_path / "root", cache_dir=tmp_path / "other")
    _commit_after_each_listing(repo, other, 3)
    n = repo.sql(f"select count(*) as n from samples('d', '{first}')").to_pylist()
    assert n == [{"n": 10}]


def test_a_commit_between_the_listing_and_the_refs_is_listed_too(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", _table(0, 10), key="k", progress=False)
    other = Repository.open(tmp_path / "root", cache_dir=tmp_path / "other")
    snapshotter = repo.catalog.snapshotter
    real = snapshotter.refs

    def refs(found: Any) -> Any:  # the listing is done; another writer appends now
        if len(other.dataset("d")) == 10:
            other.append("d", _table(10, 11), key="k", progress=False)
        return real(found)

    snapshotter.refs = refs  # type: ignore[method-assign]
    row = repo.sql("select latest, num_rows from datasets where name = 'd'").to_pylist()[0]
    assert row["num_rows"] == 11 and row["latest"] == other.resolve("d")
    assert repo.sql(QUERY).to_pylist()[0] == {"counted": 11, "listed": 11}


def test_samples_of_name_at_version_gives_the_sql_form(tmp_path: Path) -> None:
    from dload_arrow.errors import InvalidNameError

    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", _table(0, 3), key="k", progress=False)
    with pytest.raises(InvalidNameError, match=r"samples\('d', 'latest'\)"):
        repo.sql("select * from samples('d@latest')")


def test_query_runs_a_view_by_name_and_resolves_a_version_like_everywhere(
        tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    v1 = repo.commit("d", _table(0, 3), key="k", progress=False).version
    repo.tag("d", v1, "v1")
    assert repo.catalog.query("datasets").num_rows == len(repo.datasets())
    for version in (v1, v1[:12], "v1"):
        got = repo.catalog.query("version_shards", {"name": "d", "version": version})
        assert got.num_rows == 1, version
