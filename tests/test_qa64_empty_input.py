"""QA etl63 (F3): a quiet day's input (a CSV with a header alone, an empty folder or archive)
is an error of its own kind, `empty_input`, not `not_found` (a missing file), and
`dload append --allow-empty` takes it as nothing appended: exit 0, the latest id printed."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _error(r: object) -> dict[str, str]:
    return json.loads(r.err.strip().splitlines()[-1])["error"]  # type: ignore[attr-defined]


def _inputs(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "header.csv").write_text("id,value\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / ".DS_Store").write_bytes(b"x")
    with tarfile.open(tmp_path / "empty.tar.gz", "w:gz"):
        pass
    return {"header": tmp_path / "header.csv", "folder": tmp_path / "empty",
            "hidden": tmp_path / "hidden", "archive": tmp_path / "empty.tar.gz"}


def test_an_empty_input_is_its_own_kind_naming_the_flag(tmp_path: Path, run: RunFn) -> None:
    (tmp_path / "day1.csv").write_text("id,value\nd1_0,1\n")
    run("commit", "ev", "--from", str(tmp_path / "day1.csv"), "--key-column", "id")
    for what, path in _inputs(tmp_path).items():
        key = ["--key-column", "id"] if what == "header" else []
        e = _error(run("append", "ev", "--from", str(path), *key, "--json", rc=1))
        assert e["kind"] == "empty_input", (what, e)
        assert "--allow-empty" in e["message"] and "nothing to append to 'ev'" in e["message"]
    assert "(only 1 hidden)" in _error(run("append", "ev", "--from", str(tmp_path / "hidden"),
                                           "--json", rc=1))["message"]
    missing = _error(run("append", "ev", "--from", str(tmp_path / "nope.csv"), "--json", rc=1))
    assert missing["kind"] == "not_found"
    new = _error(run("commit", "other", "--from", str(tmp_path / "empty"), "--json", rc=1))
    assert new["kind"] == "empty_input" and "nothing to commit to 'other'" in new["message"]


def test_allow_empty_appends_nothing_and_prints_the_latest_id(tmp_path: Path, run: RunFn,
                                                              local_root: str) -> None:
    (tmp_path / "day1.csv").write_text("id,value\nd1_0,1\nd1_1,2\n")
    first = run("commit", "ev", "--from", str(tmp_path / "day1.csv"), "--key-column", "id")
    vid = first.out.strip().splitlines()[-1]
    for what, path in _inputs(tmp_path).items():
        key = ["--key-column", "id"] if what == "header" else []
        r = run("append", "ev", "--from", str(path), *key, "--allow-empty")
        assert r.out.strip().splitlines()[-1] == vid, what
        assert "nothing appended to ev@" in r.out and "2 rows" in r.out
        got = run("append", "ev", "--from", str(path), *key, "--allow-empty", "--json").json
        assert got["version"] == vid and got["rows"] == 2 and got["bytes_uploaded"] == 0
        assert got["empty_input"]
    repo = dl.Repository.open(local_root)
    assert [v.version for v in repo.versions("ev")] == [vid]  # nothing published
    # A non-empty input with the flag appends as without it.
    (tmp_path / "day2.csv").write_text("id,value\nd2_0,3\n")
    r = run("append", "ev", "--from", str(tmp_path / "day2.csv"), "--key-column", "id",
            "--allow-empty")
    assert r.out.strip().splitlines()[-1] != vid and repo.dataset("ev").num_rows == 3
    # No dataset to append to: not_found, whatever the flag.
    e = _error(run("append", "nope", "--from", str(tmp_path / "empty"), "--allow-empty",
                   "--json", rc=1))
    assert e["kind"] == "not_found"


def test_the_api_raises_empty_input_still_a_schema_error(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("t", pa.table({"__key__": ["a"], "v": [1]}))
    empty = pa.table({"__key__": pa.array([], pa.string()), "v": pa.array([], pa.int64())})
    for samples in ([], empty):
        with pytest.raises(dl.EmptyInputError, match="nothing to append to 't'") as info:
            repo.append("t", samples)
        assert isinstance(info.value, dl.SchemaError) and isinstance(info.value, dl.NotFoundError)
    with pytest.raises(dl.EmptyInputError, match="nothing to commit"):
        repo.commit("u", io.BytesIO(b"").readlines())
