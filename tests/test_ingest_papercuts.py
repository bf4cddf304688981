"""Ingest messages that say what is wrong and what to do: a file named .npy that is not one,
and a table whose keys repeat, from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import SchemaError
from dload_arrow.ingest import DirectorySource


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_file_named_npy_that_is_not_one_is_named_without_pickle_advice(
    tmp_path: Path, run: RunFn
) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "x.npy").write_bytes(b"not an npy file")
    with pytest.raises(SchemaError, match=r"x\.npy: not a \.npy array") as e:
        DirectorySource(folder).schema  # noqa: B018 (the schema reads the first value)
    assert "pickle" not in str(e.value) and "NUMPY" in str(e.value)
    r = run("commit", "d", "--from", str(folder), rc=1)
    assert "x.npy: not a .npy array" in r.err and "numpy.save" in r.err
    assert "pickle" not in r.err


@pytest.mark.parametrize(("table", "args", "came_from"), [
    ("id,v\n1,2\n1,3\n2,4\n", ["--key-column", "id"], "--key-column 'id'"),
    ("__key__,v\na,2\na,3\n", [], "the table's __key__ column"),
])
def test_duplicate_keys_of_a_table_point_at_key_column(
    tmp_path: Path, run: RunFn, table: str, args: list[str], came_from: str
) -> None:
    (tmp_path / "t.csv").write_text(table)
    r = run("commit", "t", "--from", str(tmp_path / "t.csv"), *args, rc=1)
    assert "1 duplicate keys in one version" in r.err
    assert f"Here the keys came from {came_from}: give --key-column another column" in r.err
    assert "key='column'" not in r.err
