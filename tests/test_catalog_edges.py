"""Catalog edges from QA: parameters of any scalar kind, a parameter named query, strict JSON
for NaN, diamond lineage, shared shards of a long append chain, samples() in CREATE VIEW, and
the NaN rows that where() counts exactly."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository, SqlError
from dload_arrow.catalog import masks, pruning
from dload_arrow.catalog.filtering import compile_filter
from dload_arrow.catalog.lineage import SHOWN_SHARED
from dload_arrow.rowfilter import filter_rows


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _labels(repo: Repository) -> None:
    repo.commit("d", [(f"k{i:02d}", {"label": i % 5, "f": i / 2}) for i in range(20)],
                progress=False)


@pytest.mark.parametrize("value", [np.int64(3), np.int32(3), np.float32(3), np.float64(3.0),
                                   pa.scalar(3), pa.scalar(3, pa.int8()), pa.scalar(3.0)],
                         ids=repr)
def test_sql_binds_numpy_and_pyarrow_scalars(repo: Repository, value: object) -> None:
    _labels(repo)
    got = repo.sql("select count(*) n from samples('d') where label = $l", l=value)
    assert got.to_pylist() == [{"n": 4}]
    assert repo.catalog.sql("select $l + 1 as x", {"l": value}).to_pylist() == [{"x": 4}]


def test_sql_binds_lists_of_scalars_arrays_and_bools(repo: Repository) -> None:
    _labels(repo)
    q = "select count(*) n from samples('d') where list_contains($l, label)"
    for value in ([1, 2], np.array([1, 2]), [np.int64(1), np.int64(2)], pa.array([1, 2]),
                  (1, 2)):
        assert repo.sql(q, l=value).to_pylist() == [{"n": 8}], value
    assert repo.sql("select $b as b", b=np.bool_(True)).to_pylist() == [{"b": True}]
    assert repo.sql("select $t as t", t="x").to_pylist() == [{"t": "x"}]


def test_a_parameter_may_be_named_query(repo: Repository) -> None:
    assert repo.sql("select $query as q", query=1).to_pylist() == [{"q": 1}]
    assert repo.catalog.sql("select $query as q", {"query": 2}).to_pylist() == [{"q": 2}]


def test_sql_json_writes_null_for_nan_and_infinity(run: RunFn, local_root: str) -> None:
    Repository.open(local_root).commit("d", [("a", {"x": 1})], progress=False)

    def strict(word: str) -> None:
        raise ValueError(f"not JSON: {word}")

    out = run("sql", "select 'nan'::double f, 'inf'::double g, '-inf'::float h, 1.5::double k, "
                     "['nan'::double, 2.0] l, {'a': 'nan'::double} s", "--json").out
    rows = json.loads(out, parse_constant=strict)
    assert rows == [{"f": None, "g": None, "h": None, "k": 1.5, "l": [None, 2.0],
                     "s": {"a": None}}]


def test_sql_json_writes_null_for_nan_in_tensor_samples(run: RunFn, local_root: str) -> None:
    vec = np.array([[math.nan, 1.0], [2.0, math.inf]], np.float32)
    Repository.open(local_root).commit("t", [("a", {"v": vec})], progress=False)

    def strict(word: str) -> None:
        raise ValueError(f"not JSON: {word}")

    rows = json.loads(run("head", "t", "--json").out, parse_constant=strict)
    assert rows[0]["v"] == [None, 1.0, 2.0, None]


def _diamond(repo: Repository) -> tuple[str, str, str]:
    a1 = repo.commit("A", [("a", {"x": 1})], progress=False).version
    a2 = repo.append("A", [("b", {"x": 2})], progress=False).version
    d = repo.commit("D", [("a", {"x": 1})], progress=False, parents=[
        {"name": "A", "version": a1, "relation": "derive"},
        {"name": "A", "version": a2, "relation": "derive"},
    ]).version
    return a1, a2, d


def test_a_diamond_lists_each_ancestor_once_at_its_smallest_depth(repo: Repository) -> None:
    a1, a2, d = _diamond(repo)
    lin = repo.lineage("D")
    assert lin.version == d
    assert [(r["depth"], r["relation"], r["version"]) for r in lin.ancestors.to_pylist()] == \
        sorted([(1, "derive", a1), (1, "derive", a2)])
    assert str(lin).count(f"A @ {a1[:12]}") == 2  # once in ancestors, once in shared shards
    assert "<- 2" not in str(lin)
    # and below: D is reached from A@v1 directly (derive) and through A@v2 (append, derive)
    down = repo.lineage("A", a1)
    assert [(r["depth"], r["relation"], r["name"]) for r in down.descendants.to_pylist()] == [
        (1, "append", "A"), (1, "derive", "D")]
    pairs = repo.sql("select name, version, related_version, count(*) n from lineage "
                     "group by all having n > 1")
    assert pairs.num_rows == 0


def test_a_diamond_keeps_the_relation_of_the_shortest_path(repo: Repository) -> None:
    # E derives from A@v2 and is appended to, so E@2 reaches A@v2 at depth 2 and A@v1 at 3
    a1, a2, _ = _diamond(repo)
    repo.commit("E", [("e", {"x": 1})], progress=False,
                parents=[{"name": "A", "version": a2, "relation": "derive"}])
    e2 = repo.append("E", [("f", {"x": 2})], progress=False).version
    ancestors = repo.lineage("E", e2).ancestors.to_pylist()
    assert [(r["depth"], r["relation"], r["name"]) for r in ancestors] == [
        (1, "append", "E"), (2, "derive", "A"), (3, "append", "A")]
    assert [r["version"] for r in ancestors[1:]] == [a2, a1]


def test_shared_shards_lists_only_the_requested_version(repo: Repository,
                                                        run: RunFn) -> None:
    appends = SHOWN_SHARED + 5
    versions = [repo.commit("m", [("k000", {"x": 0})], progress=False).version]
    for i in range(1, appends + 1):
        versions.append(repo.append("m", [(f"k{i:03d}", {"x": i})], progress=False).version)
    lin = repo.lineage("m")
    assert set(lin.shared.column("version").to_pylist()) == {versions[-1]}
    assert sorted(lin.shared.column("other_version").to_pylist()) == sorted(versions[:-1])
    first = repo.lineage("m", versions[0]).shared
    assert set(first.column("version").to_pylist()) == {versions[0]}
    assert first.num_rows == appends
    text = str(lin)
    assert text.count(" shares ") == SHOWN_SHARED
    assert f"... {appends - SHOWN_SHARED} more versions" in text
    assert len(lin.to_dict()["shared"]) == appends


def test_samples_in_create_view_says_to_make_a_table(repo: Repository) -> None:
    _labels(repo)
    with pytest.raises(SqlError, match=r"samples\(\) cannot be used in CREATE VIEW.*"
                                       r"CREATE TEMP TABLE") as e:
        repo.sql("create temp view myv as select * from samples('d')")
    assert "__dload_samples" not in str(e.value) and "myv as select" in str(e.value)
    repo.sql("create temp table myt as select * from samples('d')")
    assert repo.sql("select count(*) n from myt").to_pylist() == [{"n": 20}]
    for query in ("PREPARE p AS SELECT count(*) FROM samples('d'); EXECUTE p",
                  "PIVOT (SELECT __key__, label FROM samples('d')) ON label USING count(*)"):
        with pytest.raises(SqlError, match="make a table instead") as e:  # (QA sql 42)
            repo.sql(query)
        assert "__dload_samples" not in str(e.value), query


def test_where_counts_every_nan_row_of_a_float_column(repo: Repository) -> None:
    """DuckDB's Parquet reader can skip row groups holding NaN (their statistics leave NaN
    out); where() follows IEEE rules and keeps each NaN row for ``x != x``."""
    x = np.arange(1000, dtype=np.float64)
    x[::7] = np.nan
    repo.commit("f", pa.table({"__key__": [f"k{i:04d}" for i in range(1000)], "x": x}),
                row_group_size=100, progress=False)
    ds = repo.dataset("f")
    nans = int(np.isnan(x).sum())
    assert ds.where("x != x").to_arrow().num_rows == nans
    assert ds.where("x > 500").to_arrow().num_rows == int((x > 500).sum())
    assert ds.where("x != 3").to_arrow().num_rows == 999


def _in_table() -> pa.Table:
    n = 60
    i = [None if k % 7 == 0 else k % 9 for k in range(n)]
    f = [None if k % 11 == 0 else [0.0, -0.0, 1.5, float("nan"), 2.0, 0.1][k % 6]
         for k in range(n)]
    s = [None if k % 5 == 0 else "abcd"[k % 4] for k in range(n)]
    return pa.table({
        "__key__": [f"k{k:03d}" for k in range(n)],
        "i": pa.array(i, pa.int64()),
        "u8": pa.array([k % 4 for k in range(n)], pa.uint8()),
        "f": pa.array(f, pa.float64()),
        "f32": pa.array(f, pa.float32()),
        "s": pa.array(s, pa.string()),
        "b": pa.array([None if k % 3 == 0 else k % 2 == 0 for k in range(n)]),
        "cat": pa.array(s).dictionary_encode(),
    })


_IN_CONDITIONS = [
    "i in (1, 2, 5.0, 2.5, 1e30)", "i in (1, NULL)", "i not in (1, 3)", "i not in (1, NULL)",
    "i in (NULL)", "i not in (NULL)", "u8 in (-1, 3, 300)", "u8 not in (0, 2.5)",
    "f in (0.0, 1.5, 2)", "f not in (0, 3)", "f in (-0.0)", "f32 in (0.1, 1.5, 1)",
    "f32 not in (2, NULL)", "s in ('a', 'c')", "s not in ('a', NULL)", "b in (true)",
    "b not in (false)", "cat in ('a', 'd', 'z')", "cat not in ('b')",
    "__key__ in ('k001', 'k013', 'k059', 'zz')", "__key__ not in ('k000')",
    "not (i in (2, 4) or s in ('b'))",
]


def _as_equalities(condition: str) -> str:
    """``x [NOT] IN (a, b)`` as ``[NOT] (x = a OR x = b)``: the form IN must agree with."""

    def rewrite(m: re.Match[str]) -> str:
        values = [v.strip() for v in m.group(3).split(",")]
        ors = " OR ".join(f"{m.group(1)} = {v}" for v in values)
        return f"{'NOT ' if m.group(2) else ''}({ors})"

    return re.sub(r"(\w+) (not )?in \(([^)]*)\)", rewrite, condition)


@pytest.mark.parametrize("condition", _IN_CONDITIONS)
def test_in_lists_keep_the_rows_of_the_equalities_they_stand_for(
        repo: Repository, condition: str) -> None:
    """NULL IN (...) is NULL, a NULL literal leaves unmatched rows NULL, NOT IN negates
    that; NaN matches nothing and -0.0 equals 0.0; mask, Arrow expression, polars and
    pruning all agree with the OR of equalities."""
    table = _in_table()
    plain = _as_equalities(condition)
    assert plain != condition
    fast, slow = compile_filter(condition, table.schema), compile_filter(plain, table.schema)

    def keys_of(t: pa.Table) -> list[str]:  # NaN cells make Table.equals false
        return list(t.column("__key__").to_pylist())

    keys = keys_of(filter_rows(table, slow.row_filter))
    assert keys_of(filter_rows(table, fast.row_filter)) == keys
    assert keys_of(table.filter(fast.expression)) == keys
    repo.commit("t", table, row_group_size=1, progress=False)
    ds = repo.dataset("t")
    view = ds.where(condition)
    assert view.to_arrow().column("__key__").to_pylist() == keys
    assert view.to_polars().collect()["__key__"].to_list() == keys
    assert view.units == ds.where(plain).units


def test_in_is_one_set_test_per_batch_and_row_group(repo: Repository,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand keys used to cost a thousand kernels per batch and a thousand statistics
    tests per row group (25 s for 300 row groups); now one ``is_in`` and one bisection."""
    n = 600
    repo.commit("k", pa.table({"__key__": [f"k{i:05d}" for i in range(n)],
                               "x": list(range(n))}), row_group_size=1, progress=False)
    ds = repo.dataset("k")
    units = len(ds.where("x >= 0").units or [])
    assert units > 100  # many row groups
    wanted = [f"k{i:05d}" for i in range(0, 3000, 3)]
    calls = {"leaf": 0}
    leaf = pruning._leaf

    def counting_leaf(*args: Any) -> Any:
        calls["leaf"] += 1
        return leaf(*args)

    def no_compare(*args: Any) -> Any:
        raise AssertionError("IN compared value by value")

    monkeypatch.setattr(pruning, "_leaf", counting_leaf)
    monkeypatch.setattr(masks, "_compare", no_compare)
    keys_text = ", ".join(f"'{k}'" for k in wanted)
    view = ds.where(f"__key__ in ({keys_text})")
    got = view.to_arrow().column("__key__").to_pylist()
    assert got == [k for k in wanted if k < f"k{n:05d}"]
    assert calls["leaf"] == 0
    nums = ", ".join(str(i) for i in range(0, 3000, 3))
    assert ds.where(f"x not in ({nums})").to_arrow().num_rows == n - n // 3


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_a_float32_column_filters_alike_in_arrow_and_polars(repo: Repository, op: str) -> None:
    values = [0.1, 0.2, 0.5, float("nan"), None]
    repo.commit("f32", pa.table({"f": pa.array(values, pa.float32())}), progress=False)
    view = repo.dataset("f32").where(f"f {op} 0.1")
    frame = view.to_polars()
    got_polars = (frame.collect() if hasattr(frame, "collect") else frame)["f"].to_list()
    got_arrow = view.to_arrow()["f"].to_pylist()

    def norm(xs: list[Any]) -> list[Any]:
        return ["nan" if isinstance(x, float) and math.isnan(x) else x for x in xs]

    assert norm(got_polars) == norm(got_arrow)
