"""Versions whose schemas differ, as the store and the CLI tell them (QA evolve56).

- ``derive`` of a mapped pipeline re-infers its columns from Python values (``uint8`` ->
  ``int64``, ``float32`` -> ``float64``): it warns, naming them, and ``schema=`` keeps them;
- an append lacking a column stores null there without a word, and torch then turns that
  column from tensors to lists at the first batch holding the new rows: it warns;
- ``dload diff`` said nothing of columns added, removed or retyped;
- a refused pairs value in an append pointed at ``schema=``, which append does not take; a
  null-typed column's refusal suggested ``pa.string()`` for an int.
"""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository, SchemaError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _src(repo: Repository) -> None:
    n = 20
    repo.commit("src", pa.table({"k": [f"k{i:03d}" for i in range(n)],
                                 "label": pa.array([i % 10 for i in range(n)], pa.uint8()),
                                 "feat": pa.array([0.25] * n, pa.float32())}),
                key="k", progress=False)


def test_derive_warns_of_columns_it_widened(repo: Repository) -> None:
    _src(repo)
    src = repo.dataset("src")
    with pytest.warns(UserWarning, match=r"derive\('m'\) stored label uint8 -> int64, feat "
                                         r"float -> double.*schema="):
        repo.derive("m", src.pipeline().map(lambda r: {**r, "new": 1}), progress=False)
    schema = src.schema.append(pa.field("new", pa.int64()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.derive("m", src.pipeline().map(lambda r: {**r, "new": 1}), schema=schema,
                    force=True, progress=False)
        repo.derive("f", src.pipeline().filter(lambda r: r["label"] > 2), progress=False)
    assert repo.dataset("m").schema.field("label").type == pa.uint8()
    assert repo.dataset("f").schema.field("feat").type == pa.float32()


def test_an_append_lacking_a_column_warns(repo: Repository) -> None:
    repo.commit("d", pa.table({"k": ["a"], "x": [1], "y": [0.5]}), key="k", progress=False)
    with pytest.warns(UserWarning, match=r"lacks column\(s\) \['y'\] of 'd': the appended rows "
                                         r"store null there"):
        repo.append("d", pa.table({"k": ["b"], "x": [2]}), key="k", progress=False)
    assert repo.dataset("d").to_arrow().column("y").to_pylist() == [0.5, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.append("d", pa.table({"k": ["c"], "y": [1.5], "x": [3]}), key="k", progress=False)


def test_diff_names_columns_added_removed_and_retyped(run: RunFn, repo: Repository) -> None:
    v1 = repo.commit("d", pa.table({"k": ["a", "b"], "x": pa.array([1, 2], pa.int32()),
                                    "y": [0.5, 1.5]}), key="k", progress=False).version
    v2 = repo.commit("d", pa.table({"k": ["a", "b"], "x": pa.array([1, 2], pa.int64()),
                                    "z": ["p", "q"]}), key="k", progress=False).version
    out = run("diff", f"d@{v1}", f"d@{v2}").out
    assert "  columns: + z; - y; ~ x int32 -> int64\n" in out
    got = run("diff", f"d@{v1}", f"d@{v2}", "--json").json["columns"]
    assert got == {"added": ["z"], "removed": ["y"],
                   "changed": [{"name": "x", "old": "int32", "new": "int64"}]}
    assert "columns" not in run("diff", f"d@{v2}", f"d@{v2}").out


def test_refusals_point_at_what_works(repo: Repository) -> None:
    repo.commit("d", [("a", {"x": 1})], schema=pa.schema([("x", pa.int32())]), progress=False)
    with pytest.raises(SchemaError, match="an append keeps the stored type: commit a new "
                                          "version with the wider one"):
        repo.append("d", [("b", {"x": 2**40})], progress=False)
    rows = [(f"k{i:05d}", {"w": None if i < 1024 else i}) for i in range(1030)]
    with pytest.raises(SchemaError, match=r"schema=pa.schema\(\[\('w', pa.int64\(\)\)\]\)"):
        repo.commit("n", rows, progress=False)
    rows = [(f"k{i:05d}", {"w": None if i < 1024 else 0.5}) for i in range(1030)]
    with pytest.raises(SchemaError, match=r"pa.float64\(\)"):
        repo.commit("n", rows, progress=False)
