"""QA text64: a Parquet or Arrow file's text column holding bytes that are not UTF-8 (a writer
that never checked) was committed, and every read of that version failed afterwards (at the
column's min or max: an internal error in the commit); its keys too."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.ingest import open_table


def _unchecked(values: list[bytes]) -> pa.Array:
    """A string array holding ``values`` as they are, not validated (as other writers do)."""
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return pa.Array.from_buffers(pa.string(), len(values), [
        None, pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(b"".join(values))])


@pytest.mark.parametrize("values", [[b"ok", b"caf\xe9"], [b"aaa", b"b\xe9c", b"zzz"]])
def test_text_that_is_not_utf8_is_refused_at_the_commit(tmp_path: Path, local_root: str,
                                                        capsys: pytest.CaptureFixture[str],
                                                        values: list[bytes]) -> None:
    run: RunFn = runner(capsys, ["--root", local_root])
    ids = [str(i) for i in range(len(values))]
    pq.write_table(pa.table({"id": ids, "text": _unchecked(values)}), tmp_path / "t.parquet")
    r = run("commit", "t", "--from", str(tmp_path / "t.parquet"), "--key-column", "id",
            "--json", rc=1)
    error = json.loads(r.err.strip().splitlines()[-1])["error"]
    assert error["kind"] == "schema" and "column 'text' holds text that is not UTF-8" in (
        error["message"])
    repo = dl.Repository.open(local_root)
    assert repo.datasets() == []
    nested = pa.StructArray.from_arrays([_unchecked([b"\xff"])], ["x"])
    with pytest.raises(dl.SchemaError, match="column 's' holds text that is not UTF-8"):
        repo.commit("s", pa.table({"__key__": ["a"], "s": nested}))
    with pytest.raises(dl.SchemaError, match=r"key column '__key__', row 1: key b'caf\\xe9' "
                                             "is not UTF-8"):
        repo.commit("k", pa.table({"__key__": _unchecked([b"ok", b"caf\xe9"]), "v": [1, 2]}))


def test_a_json_lines_document_of_several_mb_is_read(tmp_path: Path, local_root: str) -> None:
    """pyarrow's 1 MiB blocks refused a line of 2 MB or more ("straddling object")."""
    import gzip

    big = "x" * 3_000_000
    lines = [json.dumps({"id": "a", "text": "short"}), json.dumps({"id": "b", "text": big}),
             json.dumps({"id": "c", "text": "after"})]
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n")
    with gzip.open(tmp_path / "docs.jsonl.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    repo = dl.Repository.open(local_root)
    for name, file in (("plain", "docs.jsonl"), ("gz", "docs.jsonl.gz")):
        repo.commit(name, open_table(str(tmp_path / file), key="id"), key="id")
        ds = repo.dataset(name)
        assert ds.num_rows == 3 and ds.get("b")["text"] == big and ds.get("c")["text"] == "after"


def test_a_lone_surrogate_escape_names_its_line(tmp_path: Path, local_root: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """pyarrow said "in row 4" (from 0, no text) for a line holding "\\ud800"."""
    run: RunFn = runner(capsys, ["--root", local_root])
    lines = [json.dumps({"id": str(i), "text": f"t{i}"}) for i in range(6)]
    lines[4] = '{"id": "4", "text": "bad \\ud800 x"}'
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    r = run("commit", "s", "--from", str(tmp_path / "s.jsonl"), rc=1)
    assert "s.jsonl', line 5:" in r.err and "lone surrogate" in r.err and "in row 4" not in r.err


def test_a_column_name_in_another_normal_form_says_so(local_root: str) -> None:
    import unicodedata

    repo = dl.Repository.open(local_root)
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    repo.commit("c", [("1", {nfc: "x"})])
    with pytest.raises(dl.SchemaError, match="only in Unicode normalization"):
        repo.append("c", [("3", {nfd: "y"})])
