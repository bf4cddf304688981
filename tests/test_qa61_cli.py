"""Errors a script can read (carried from QA infer60: under ``--json`` an error was plain text,
so a script told not-found from conflict only by the message) and the lookup hints of QA
lookup60 (``ds.get(k, None)`` passes ``columns=None``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import dload

from dload_arrow import Repository
from dload_arrow.errors import MissingKeyError


@pytest.fixture()
def root(tmp_path: Path) -> str:
    r = tmp_path / "root"
    repo = Repository.open(r)
    repo.commit("d", [("a", {"x": 1})], progress=False)
    return str(r)


def _error(err: str) -> dict[str, str]:
    doc = json.loads(err.strip().splitlines()[-1])
    assert set(doc) == {"error"}
    return doc["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("args", "kind", "type_", "words"), [
    (["info", "nope"], "not_found", "NotFoundError", "no dataset 'nope'"),
    (["head", "d", "-n", "-1"], "usage", "BadParameter", "-n"),
    (["info", "d@ffff"], "not_found", "NotFoundError", "ffff"),
    (["sql", "select * from nowhere"], "sql", "SqlError", "nowhere"),
])
def test_json_errors_are_one_json_line_with_a_kind(tmp_path: Path, root: str, args: list[str],
                                                   kind: str, type_: str, words: str) -> None:
    r = dload(*args, "--json", "--root", root, cwd=tmp_path, rc=1)
    assert r.out == ""
    e = _error(r.err)
    assert (e["kind"], e["type"]) == (kind, type_), e
    assert words in e["message"] and not e["message"].startswith("dload:")
    plain = dload(*args, "--root", root, cwd=tmp_path, rc=1)
    assert plain.err.startswith("dload: error: ") and e["message"] in plain.err


def test_a_conflict_is_told_from_a_missing_dataset(tmp_path: Path, root: str) -> None:
    repo = Repository.open(root)
    first = repo.dataset("d").version
    repo.append("d", [("b", {"x": 2})], progress=False)
    src = tmp_path / "src.jsonl"
    src.write_text('{"__key__": "c", "x": 3}\n')
    r = dload("commit", "d", "--from", str(src), "--if-latest", first, "--json", "--root", root,
              cwd=tmp_path, rc=1)
    assert _error(r.err)["kind"] == "conflict", r.err


def test_json_after_a_double_dash_is_an_argument_not_the_flag(tmp_path: Path,
                                                               root: str) -> None:
    r = dload("info", "--root", root, "--", "--json", cwd=tmp_path, rc=1)
    assert r.err.startswith("dload: error: "), r.err


def test_get_without_default_names_the_keyword(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "r")
    repo.commit("d", [("a", {"x": 1})], progress=False)
    ds = repo.dataset("d")
    with pytest.raises(MissingKeyError, match=r"no sample with key 'b'.*default=None"):
        ds.get("b", None)  # the second positional argument is columns
    assert ds.get("b", default=None) is None
    assert ds.get("a", None) == {"__key__": "a", "x": 1}


def test_datasets_created_is_the_commit_after_a_whole_removal(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "r")
    repo.commit("d", [("a", {"x": 1})], progress=False)
    repo.commit("d", [("c", {"x": 3})], progress=False)
    repo.rm("d")
    repo.commit("d", [("b", {"x": 2})], progress=False)
    repo.commit("e", [("b", {"x": 2})], progress=False)
    repo.commit("e", [("f", {"x": 2})], progress=False)
    rows = repo.sql("select name, created, updated from datasets order by name").to_pylist()
    log = repo.sql("select name, time, action from log order by time").to_pylist()
    d_commits = [r["time"] for r in log if r["name"] == "d" and r["action"] == "commit"]
    e_commits = [r["time"] for r in log if r["name"] == "e" and r["action"] == "commit"]
    assert rows[0]["created"] == d_commits[-1] == rows[0]["updated"]
    assert (rows[1]["created"], rows[1]["updated"]) == (e_commits[0], e_commits[-1])


def test_an_index_out_of_a_view_says_it_is_the_view(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "r")
    repo.commit("d", [("a", {"x": 1}), ("b", {"x": 2})], progress=False)
    with pytest.raises(IndexError, match=r"d@\w+ \(this view of it\) with 1 row$"):
        repo.dataset("d").where("x = 1")[5]
    with pytest.raises(IndexError, match=r"d@\w+ with 2 rows"):
        repo.dataset("d")[5]
