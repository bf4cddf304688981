"""An append does not store a typed column into a text column as text (QA evolve56: a table
appended ``7`` to a string column as ``'7'``, where the same value as a sample is refused)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from dload_arrow import Repository, SchemaError


@pytest.mark.parametrize(("column", "values"), [("s", [7]), ("s", [0.1]), ("s", [True]),
                                                ("b", [5])])
def test_a_typed_column_is_not_appended_as_text(tmp_path: Path, column: str,
                                                values: list[object]) -> None:
    repo = Repository.open(tmp_path / "root")
    repo.commit("d", [("a", {"s": "x", "b": b"q"})], progress=False)
    row = {"__key__": ["k"], "s": ["ok"], "b": [b"r"], column: values}
    with pytest.raises(SchemaError, match=rf"column '{column}' is .* does not store numbers, "
                                          "booleans or other typed values as text"):
        repo.append("d", pa.table(row), progress=False)
    with pytest.raises(SchemaError, match="does not fit type"):
        repo.append("d", [("k", {"s": "ok", "b": b"r", column: values[0]})], progress=False)
    assert repo.dataset("d").num_rows == 1


def test_text_of_another_width_and_all_null_columns_still_append(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root")
    repo.commit("d", [("a", {"s": "x"})], progress=False)
    repo.append("d", pa.table({"__key__": ["b"], "s": pa.array(["y"], pa.large_string())}),
                progress=False)
    repo.append("d", pa.table({"__key__": ["c"], "s": pa.nulls(1, pa.int64())}),
                progress=False)
    assert [s["s"] for s in repo.dataset("d").samples()] == ["x", "y", None]


def test_the_cli_appends_a_csv_to_text_columns_as_written(tmp_path: Path) -> None:
    from test_cli import dload

    (tmp_path / "a.csv").write_text("id,zip\n1,02134\n")
    (tmp_path / "b.csv").write_text("id,zip\n2,10001\n")
    root = str(tmp_path / "root")
    repo = Repository.open(root)
    repo.commit("z", pa.table({"__key__": ["1"], "zip": ["02134"]}), progress=False)
    dload("append", "z", "--from", str(tmp_path / "b.csv"), "--key-column", "id", "--root",
          root, cwd=tmp_path)
    assert [s["zip"] for s in repo.dataset("z").samples()] == ["02134", "10001"]
