"""QA chat65 (and text64): the same rows got another version id, and no shared shard, from a
Parquet file (`list<element>`), a DuckDB result (`list<l>`) or a schema= naming the list's
field otherwise, than from JSON Lines or Python (`list<item>`)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def test_the_same_rows_are_one_version_whatever_names_the_list_field(
        local_root: str, tmp_path: Path, capsys: object) -> None:
    rows = [{"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"},
                                         {"role": "assistant", "content": f"a{i}"}],
             "tags": [[1, 2], [3]]} for i in range(4)]
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "chat.parquet")  # list<element>
    run: RunFn = runner(capsys, ["--root", local_root])  # type: ignore[arg-type]
    a = run("commit", "chat", "--from", str(tmp_path / "chat.jsonl"), "--key-column", "id")
    b = run("commit", "chat", "--from", str(tmp_path / "chat.parquet"), "--key-column", "id")
    assert a.out.strip().splitlines()[-1] == b.out.strip().splitlines()[-1]
    repo = dl.Repository.open(local_root)
    ds = repo.dataset("chat")
    assert "element" not in str(ds.schema) and "list<item: struct" in str(ds.schema)
    again = repo.commit("chat", repo.sql("SELECT * FROM samples('chat') ORDER BY __key__"))
    assert again.version == ds.version and again.shards_uploaded == 0  # (list<l>)
    named = pa.schema([("v", pa.list_(pa.field("element", pa.int64())))])
    x = repo.commit("x", [("a", {"v": [1, 2]})]).version
    assert repo.commit("x", [("a", {"v": [1, 2]})], schema=named).version == x
    assert repo.commit("x", pa.table({"__key__": ["a"], "v": pa.array([[1, 2]], named[0].type)})
                       ).version == x


def test_a_new_nested_field_in_an_appended_table_is_named(repo: dl.Repository) -> None:
    def table(args: dict[str, object]) -> pa.Table:
        return pa.Table.from_pylist([{"__key__": f"k{len(args)}{k}", "messages": [
            {"role": "assistant", "tool_calls": [{"function": {"arguments": args}}]}]}
            for k in "ab"])

    repo.commit("chat", table({"city": "Paris", "limit": 3}))
    with pytest.raises(dl.SchemaError, match=r"its field messages\[\]\.tool_calls\[\]\."
                                             r"function\.arguments\.units is not in the stored"):
        repo.append("chat", table({"city": "Paris", "units": "C", "x": 1}))
