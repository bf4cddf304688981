"""QA round 46 (CLI): ``NAME@`` with an empty version, ``init --cache-dir URL``, exported
bools, separators and bidi controls in text tables, counts in the singular."""

from __future__ import annotations

import os
from pathlib import Path

from test_cli import dload

import dload_arrow as dl


def _two(root: Path) -> tuple[str, str]:
    repo = dl.Repository.open(str(root))
    old = repo.commit("ds", [("k", {"v": 1})], progress=False).version
    return old, repo.commit("ds", [("k", {"v": 2})], progress=False).version


def test_an_empty_version_after_the_at_is_refused_by_every_command(tmp_path: Path) -> None:
    _two(tmp_path / "root")
    where = ["--root", str(tmp_path / "root")]
    for args in (["pin", "ds@"], ["tag", "ds@", "t1"], ["info", "ds@"], ["head", "ds@ "],
                 ["rm", "ds@", "--yes"]):
        r = dload(*args, *where, cwd=tmp_path, rc=1)
        assert "is empty (an unset variable?): write ds for the latest, or ds@VERSION" in r.err
    assert not (tmp_path / "dload.lock").exists()
    assert "t1" not in dl.Repository.open(str(tmp_path / "root")).refs("ds")


def test_init_refuses_a_url_cache_dir_and_writes_nothing(tmp_path: Path) -> None:
    r = dload("init", "--project", "--root", "root", "--cache-dir", "s3://b/cache",
              cwd=tmp_path, rc=1)
    assert "cache_dir 's3://b/cache' (from --cache-dir) is a URL" in r.err
    assert not (tmp_path / "dload.toml").exists()


def test_export_writes_a_bool_as_json(tmp_path: Path) -> None:
    dl.Repository.open(str(tmp_path / "root")).commit(
        "t", [("r0", {"flag": True, "off": False, "flags": [True, False], "n": 3})],
        progress=False)
    dload("export", "t", "r0", "--to", str(tmp_path / "out"), "--root", str(tmp_path / "root"),
          cwd=tmp_path)
    got = {p.name: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    by_column = {name.rsplit(".", 1)[-1]: data for name, data in got.items()}
    assert by_column["flag"] == b"true" and by_column["off"] == b"false"
    assert by_column["flags"] == b"[true, false]" and by_column["n"] == b"3"


def test_text_tables_escape_separators_and_bidi_controls(tmp_path: Path) -> None:
    os.makedirs(tmp_path / "root" / "datasets")
    q = ("select 'a' || chr(8232) || 'b' as sep, 'x' || chr(8238) || 'cba' as bidi, "
         "'v' || chr(12288) as last")
    out = dload("sql", q, "--root", str(tmp_path / "root"), cwd=tmp_path).out
    assert out.splitlines() == ["sep       bidi        last", "a\\u2028b  x\\u202ecba  v\u3000"]


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    old, _ = _two(tmp_path / "root")
    where = ["--root", str(tmp_path / "root")]
    assert "1 shard, " in dload("info", "ds", *where, cwd=tmp_path).out
    assert "removed 1 version of ds" in dload("rm", "ds", "--version", old, "--yes", *where,
                                              cwd=tmp_path).out
    assert "would delete 1 shard (" in dload("gc", "--grace", "0s", "--dry-run", *where,
                                            cwd=tmp_path).out


def test_log_and_versions_refuse_an_empty_version_too(tmp_path: Path) -> None:
    _two(tmp_path / "root")
    for args in (["log", "ds@"], ["versions", "ds@"]):
        r = dload(*args, "--root", str(tmp_path / "root"), cwd=tmp_path, rc=1)
        assert "is empty (an unset variable?)" in r.err
