"""QA pass 8 on the foundation: manifests whose row-group counts disagree with their rows,
names in manifests told apart from names users type, and stray files in a ref's log."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from test_manifest import _ipc, hostile

from dload_arrow import IntegrityError, InvalidNameError, Repository
from dload_arrow.store.manifest import Manifest


def _with_column(m: Manifest, name: str, values: list[Any]) -> bytes:
    table = m.table
    i = table.schema.get_field_index(name)
    table = table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))
    return _ipc(table)


@pytest.mark.parametrize("edit", ["rows", "rg_rows", "rg_rows_negative", "rg_bytes_short",
                                  "rg_offsets_null", "rg_bytes_negative"])
def test_row_group_counts_that_disagree_with_the_rows_are_refused(repo: Repository,
                                                                  edit: str) -> None:
    m = repo.commit("g", [(f"k{i:03d}", {"b": bytes(100)}) for i in range(40)],
                    row_group_size=1000, progress=False).manifest
    t = m.table
    rows, rg_rows = t.column("rows").to_pylist(), t.column("rg_rows").to_pylist()
    assert len(rows) == 1 and len(rg_rows[0]) >= 3
    first = rg_rows[0]
    if edit == "rows":  # the shard claims more rows than its row groups hold
        data = _with_column(m, "rows", [rows[0] + 5])
    elif edit == "rg_rows":
        data = _with_column(m, "rg_rows", [[first[0] + 1, *first[1:]]])
    elif edit == "rg_rows_negative":  # adds up, but with a negative count
        data = _with_column(m, "rg_rows", [[first[0] + 1, -1, *first[2:]]])
    elif edit == "rg_offsets_null":
        offsets = t.column("rg_offsets").to_pylist()[0]
        data = _with_column(m, "rg_offsets", [[offsets[0], None, *offsets[2:]]])
    elif edit == "rg_bytes_negative":
        sizes = t.column("rg_bytes").to_pylist()[0]
        data = _with_column(m, "rg_bytes", [[*sizes[:-1], -sizes[-1]]])
    else:
        data = _with_column(m, "rg_bytes", [t.column("rg_bytes").to_pylist()[0][:-1]])
    with pytest.raises(IntegrityError, match=r"row groups .* the manifest is corrupt"):
        Manifest.from_bytes(data)
    Manifest.from_bytes(_ipc(t))  # the unedited table passes


@pytest.mark.parametrize("where", ["name", "parent"])
def test_a_bad_name_inside_a_manifest_says_the_manifest_is_corrupt(repo: Repository,
                                                                   where: str) -> None:
    committed = repo.commit("good", [("a", {"x": 1})], progress=False).manifest
    info: dict[str, Any] = {"name": "../other"} if where == "name" else {
        "parents": [{"name": "../etc", "version": "0" * 64}]}
    with pytest.raises(InvalidNameError) as e:
        Manifest.from_bytes(hostile(committed, info=info))
    text = str(e.value)
    assert "the manifest is corrupt or hostile" in text and "'../" in text
    assert "imagenet-small" not in text  # not the advice for a name the user typed


@pytest.mark.parametrize("stray", ["notes.txt", ".DS_Store", "000000000002.json.bak"])
def test_stray_files_in_a_refs_log_are_passed_over(repo: Repository, stray: str) -> None:
    repo.commit("d", [("a", {"x": 1})], progress=False)
    repo.rm("d")
    repo.storage.write(f"datasets/d/log/latest/{stray}", b"not json")
    v = repo.commit("d", [("a", {"x": 2})], progress=False)  # the ref's next first move
    assert repo.dataset("d").version == v.version
    log = repo.log("d")
    assert [e.seq for e in log if e.ref == "latest"] == [1, 2, 3]
    moves = "select count(*) as n from log where name = 'd' and ref is not null"  # not the rm
    assert repo.sql(moves).column(0)[0].as_py() == 3
