"""Two samples() sources of one query that fit the cache alone but not together are refused
at once (a query opens all its files together: the second waited 600 s for room the query
itself held)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from small_disk import SmallDisk

from dload_arrow import InfeasiblePlanError, Repository


def _commit(root: str, name: str, rows: int) -> None:
    table = pa.table({"k": list(range(rows)), "b": [os.urandom(1000) for _ in range(rows)]})
    Repository.open(root).commit(name, table, shard_size="100KB", progress=False)


def test_two_sources_that_fit_alone_but_not_together_are_refused_at_once(
        memory_root: str, tmp_path: Path) -> None:
    _commit(memory_root, "a", 400)  # about 400 KB each
    _commit(memory_root, "b", 400)
    repo = Repository.open(memory_root, cache_dir=tmp_path / "c", cache_budget="600KB")
    assert repo.sql("SELECT count(*) AS n FROM samples('a')").column("n")[0].as_py() == 400
    assert repo.sql("SELECT count(*) AS n FROM samples('b')").column("n")[0].as_py() == 400
    t0 = time.monotonic()
    with pytest.raises(InfeasiblePlanError, match="2 samples\\(\\) sources") as e:
        repo.sql("SELECT count(*) FROM samples('a') JOIN samples('b') USING (k)")
    assert time.monotonic() - t0 < 60
    assert "raise the cache budget to at least" in str(e.value)
    # the same source twice holds its shards once: it fits
    got = repo.sql("SELECT count(*) AS n FROM samples('a') x JOIN samples('a') y USING (k)")
    assert got.column("n")[0].as_py() == 400
    # with room for both, the join runs
    roomy = Repository.open(memory_root, cache_dir=tmp_path / "c2", cache_budget="2MB")
    got = roomy.sql("SELECT count(*) AS n FROM samples('a') JOIN samples('b') USING (k)")
    assert got.column("n")[0].as_py() == 400

def test_a_small_disk_that_holds_each_source_but_not_both_blames_neither_alone(
        memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit(memory_root, "a", 400)
    _commit(memory_root, "b", 400)
    cache = tmp_path / "c"
    os.makedirs(cache)
    monkeypatch.setattr(os, "statvfs", SmallDisk(str(cache), 650_000))
    repo = Repository.open(memory_root, cache_dir=cache, cache_budget="unlimited")
    assert repo.sql("SELECT count(*) AS n FROM samples('b')").column("n")[0].as_py() == 400
    with pytest.raises(InfeasiblePlanError) as e:
        repo.sql("SELECT count(*) FROM samples('a') JOIN samples('b') USING (k)")
    text = str(e.value)
    assert "2 samples() sources" in text and "each fits alone" in text, text
    assert "free disk space" in text and "raise the cache budget" not in text, text


def test_when_the_disk_is_what_two_sources_do_not_fit_the_fix_is_disk_space(
        memory_root: str, tmp_path: Path) -> None:
    # Reached when the second source fits the free disk but not its reserve as well (each
    # source's own plan catches the rest): the fix names the disk, not the budget.
    from dataclasses import replace

    from dload_arrow.catalog.files import ShardFiles, _check_together

    _commit(memory_root, "a", 400)
    plan = Repository.open(memory_root, cache_dir=tmp_path / "c").dataset("a").plan()
    held = [ShardFiles([], [], plan, {"x" * 64: 500_000}).shards]
    on_disk = replace(plan, budget_bytes=800_000, budget_setting_bytes=10**7)
    with pytest.raises(InfeasiblePlanError, match=r"800\.0 KB its disk can hold") as e:
        _check_together(on_disk, {"y" * 64: 400_000}, held)
    assert "raise the cache budget" not in str(e.value)
    assert f"free disk space under {plan.cache_dir}" in str(e.value)
    by_budget = replace(plan, budget_bytes=800_000, budget_setting_bytes=800_000)
    with pytest.raises(InfeasiblePlanError, match=r"the cache's 800\.0 KB") as e:
        _check_together(by_budget, {"y" * 64: 400_000}, held)
    assert "raise the cache budget to at least" in str(e.value)
    assert "free disk space" not in str(e.value)
    _check_together(on_disk, {"x" * 64: 500_000}, held)  # the same shard held once: fits


def test_a_check_that_fails_gives_the_tables_figure_and_names_one_source(
        memory_root: str, tmp_path: Path) -> None:
    import re

    repo = Repository.open(memory_root, cache_dir=tmp_path / "c", cache_budget="1MB")
    table = pa.table({"k": list(range(1000)), "b": [os.urandom(4096) for _ in range(1000)]})
    repo.commit("d", table, shard_size="256KiB", row_group_size="64KiB", progress=False)
    report = repo.dataset("d").shuffle(buffer=64, seed=0).batch(16).check(4)
    with pytest.raises(InfeasiblePlanError) as e:
        report.raise_if_infeasible()
    text = str(e.value)
    assert text.startswith("this source does not fit this machine: "), text
    said = re.search(r"it needs (\S+ \S+) resident", text)
    assert said is not None, text
    row = next(ln for ln in text.splitlines() if ln.startswith("d@"))
    assert row.split()[-4:-2] == said.group(1).split(), text  # the table's resident column
    assert "raise the cache budget to at least" in text
