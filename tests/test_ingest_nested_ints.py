"""JSON Lines integers that float64 would round are refused inside objects and lists too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository
from dload_arrow.errors import SchemaError
from dload_arrow.ingest import open_table

BIG = "9007199254740993"  # 2**53 + 1: float64 stores 9007199254740992.0


@pytest.mark.parametrize(("text", "where"), [
    ('{"id": "a", "m": {"n": @}}\n{"id": "b", "m": {"n": 0.5}}\n', "m.n"),
    ('{"id": "a", "l": [@, 0.5]}\n', "l[]"),
    ('{"id": "a", "m": {"l": [{"x": 1.5}, {"x": @}]}}\n', "m.l[].x"),
    ('{"id": "a", "m": null}\n{"id": "b", "m": {"s": [[0.5], [@]]}}\n', "m.s[][]"),
])
def test_a_nested_integer_that_float64_rounds_is_refused_with_its_path(
        tmp_path: Path, text: str, where: str) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(text.replace("@", BIG))
    pattern = (re.escape(f"t.jsonl', column '{where}': the integer {BIG} would be stored as ")
               + r"9007199254740992\.0")
    with pytest.raises(SchemaError, match=pattern):
        open_table(f, key="id").read_all()


def test_nested_floats_and_exact_integers_are_kept(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text('{"id": "a", "m": {"n": 1e20, "l": [9007199254740992, 0.5]}}\n'
                 '{"id": "b", "m": {"n": 9007199254740993.0, "l": []}}\n')
    rows = open_table(f, key="id").read_all().column("m").to_pylist()
    assert rows == [{"n": 1e20, "l": [9007199254740992.0, 0.5]},
                    {"n": 9007199254740992.0, "l": []}]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_cli_commit_of_a_nested_big_integer_stores_nothing(
        tmp_path: Path, run: RunFn, local_root: str) -> None:
    f = tmp_path / "t.jsonl"
    text = '{"id": "a", "m": {"n": @, "f": 0.25}}\n{"id": "b", "m": {"n": 0.5}}\n'
    f.write_text(text.replace("@", BIG))
    err = run("commit", "d", "--from", str(f), "--key-column", "id", rc=1).err
    assert f"column 'm.n': the integer {BIG}" in err and "JSON strings" in err
    assert "d" not in Repository.open(local_root).datasets()


@pytest.mark.parametrize(("name", "text"), [
    ("t.jsonl", '{"id": "a", "v": @}\n{"id": "b", "v": 0.5}\n'),
    ("n.jsonl", '{"id": "a", "m": {"v": [@]}}\n'),
    ("t.csv", "id,v\na,@\nb,1\n"),
])
def test_an_integer_beyond_float64s_range_is_refused_not_stored_as_inf(
        tmp_path: Path, name: str, text: str) -> None:
    f = tmp_path / name
    f.write_text(text.replace("@", "1" * 400))
    with pytest.raises(SchemaError, match=r"the integer 1111.* would be stored as inf"):
        open_table(f, key="id").read_all()
