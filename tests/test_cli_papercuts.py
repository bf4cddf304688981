"""CLI papercuts from a new-user QA pass: a mistyped root, negative counts, zero sizes,
misleading messages and output that did not match its help.

Most checks run `main()` in this process (a subprocess per command would import pyarrow each
time); the demo runs as a subprocess because it imports torch.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import random
from pathlib import Path

import numpy as np
import pytest
from cli_run import RunFn, runner
from test_cli import dload

from dload_arrow import Repository, StorageError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> RunFn:
    return runner(capsys)


def _folder(base: Path, n: int = 6) -> Path:
    d = base / "files"
    d.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (d / f"{i:02d}.bin").write_bytes(random.Random(i).randbytes(400))
    return d


READ_ONLY = [
    ["ls"], ["info", "x"], ["versions", "x"], ["recipe", "x"], ["log", "x"], ["head", "x"],
    ["diff", "x@a", "x@b"], ["sql", "select 1"], ["pull", "x"], ["verify", "x"],
    ["export", "x", "k", "--to", "out"], ["gc"], ["tag", "x", "v1"],
    ["pin", "x"], ["rm", "x", "--yes"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=[" ".join(a[:2]) for a in READ_ONLY])
def test_a_missing_local_root_is_an_error_not_an_empty_root(args: list[str], tmp_path: Path,
                                                            run: RunFn) -> None:
    missing = tmp_path / "typo" / "root"
    r = run(*args, "--root", str(missing), rc=1)
    assert f"root {missing} (from --root) does not exist" in r.err
    if args[0] not in ("ls", "sql", "cache", "gc"):  # commands about one dataset name it
        assert r.err.startswith("dload: error: no dataset 'x': root "), r.err
    assert "dload commit" in r.err and "DLOAD_ROOT" in r.err
    assert not missing.exists() and not (tmp_path / "typo").exists()


def test_the_error_names_where_the_root_setting_came_from(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLOAD_ROOT", str(tmp_path / "nope"))
    assert "(from DLOAD_ROOT) does not exist" in run("ls", rc=1).err
    (Path.cwd() / "dload.toml").write_text(f'root = "{tmp_path / "nope2"}"\n')
    monkeypatch.delenv("DLOAD_ROOT")
    assert f"(from {Path.cwd() / 'dload.toml'}) does not exist" in run("ls", rc=1).err


def test_a_file_as_root_is_refused_by_every_command(tmp_path: Path, run: RunFn) -> None:
    afile = tmp_path / "photos.zip"
    afile.write_bytes(b"not a root")
    for args in (["ls"], ["info", "x"], ["status"],
                 ["commit", "x", "--from", str(_folder(tmp_path))]):
        r = run(*args, "--root", str(afile), rc=1)
        assert f"root {afile} is a file, not a directory" in r.err


def test_commands_that_write_create_a_missing_root(tmp_path: Path, run: RunFn) -> None:
    root = tmp_path / "new" / "root"
    run("commit", "x", "--from", str(_folder(tmp_path)), "--root", str(root))
    r = run("append", "y", "--from", str(_folder(tmp_path / "b")), "--root",
            str(tmp_path / "r2"), rc=1)
    assert "no dataset 'y'" in r.err  # append needs the dataset, not an existing root
    assert [d["name"] for d in run("ls", "--root", str(root), "--json").json] == ["x"]
    # unpin and cache clear never read the root
    run("unpin", "x", "--root", str(tmp_path / "gone"))
    run("cache", "clear", "--root", str(tmp_path / "gone"))


def test_status_says_a_missing_root_does_not_exist_yet(tmp_path: Path, run: RunFn) -> None:
    missing = str(tmp_path / "nope")
    st = run("status", "--root", missing, "--json").json
    assert st["root"] == {"reachable": True, "exists": False, "datasets": 0, "error": None}
    text = run("status", "--root", missing).out
    assert "root: does not exist yet" in text and "reachable, 0 datasets" not in text
    run("commit", "x", "--from", str(_folder(tmp_path)), "--root", missing)
    st = run("status", "--root", missing, "--json").json
    assert st["root"]["exists"] is True and st["root"]["datasets"] == 1


def test_negative_counts_and_zero_sizes_are_refused(tmp_path: Path, local_root: str,
                                                    run: RunFn) -> None:
    base = ["--root", local_root]
    folder = str(_folder(tmp_path))
    run("commit", "x", "--from", folder, *base)
    assert "Invalid value for '-n': -3" in run("head", "x", "-n", "-3", *base, rc=1).err
    run("head", "x", "-n", "0", *base, rc=1)
    assert "Invalid value for '--limit': -1" in run("sql", "select 1", "--limit", "-1", *base,
                                                    rc=1).err
    run("diff", "x", "x", "--keys", "-1", *base, rc=1)
    for opt in ("--shard-size", "--row-group-size"):
        r = run("commit", "y", "--from", folder, opt, "0", *base, rc=1)
        assert f"Invalid value for '{opt}': '0' is 0 bytes; give a size above 0" in r.err
    r = run("commit", "y", "--from", folder, "--shard-size", "lots", *base, rc=1)
    assert "'lots' is not a size" in r.err
    assert "y" not in Repository.open(local_root).datasets()


def test_sql_limit_zero_prints_every_row_and_csv_prints_a_table(local_root: str,
                                                               run: RunFn) -> None:
    base = ["--root", local_root]
    Repository.open(local_root).commit(
        "t", [(f"k{i}", {"x": i, "s": None if i == 1 else f"v,{i}", "v": [i, i]})
              for i in range(5)], progress=False)
    q = "select __key__, x, s, v from samples('t') order by x"
    limited = run("sql", q, "--limit", "2", *base).out
    assert "k1" in limited and "k2" not in limited and "... 3 more rows" in limited
    every = run("sql", q, "--limit", "0", *base).out
    assert "k4" in every and "more rows" not in every and "(none)" not in every
    rows = list(csv.reader(io.StringIO(run("sql", q, "--csv", *base).out)))
    assert rows[0] == ["__key__", "x", "s", "v"]
    assert rows[1] == ["k0", "0", "v,0", "[0, 0]"] and rows[2][2] == "" and len(rows) == 6
    assert "choose one of --json and --csv" in run("sql", q, "--csv", "--json", *base, rc=1).err


def test_head_shows_tensors_as_dtype_and_shape(local_root: str, run: RunFn) -> None:
    Repository.open(local_root).commit(
        "img", [(f"img-{i:05d}", {"pixels": np.full((8, 8), i, np.uint8), "jpeg": b"\xff" * 7})
                for i in range(3)], progress=False)
    text = run("head", "img", "-n", "2", "--root", local_root).out
    assert "uint8[8, 8]" in text and "<7 B>" in text and "[0, 0, 0" not in text
    rows = run("head", "img", "-n", "1", "--root", local_root, "--json").json
    assert rows[0]["pixels"] == [0] * 64  # --json: flat values
    assert "flat list" in run("head", "--help").out


def test_export_of_an_unsafe_key_names_the_key_not_an_archive(tmp_path: Path, local_root: str,
                                                              run: RunFn) -> None:
    Repository.open(local_root).commit("bad", [("a/../../b", {"x": b"1"}), ("ok", {"x": b"2"})],
                                       progress=False)
    out = tmp_path / "out"
    for how in (["a/../../b"], ["--index", "0"]):
        r = run("export", "bad", *how, "--to", str(out), "--root", local_root, rc=1)
        assert "sample key 'a/../../b' of bad@" in r.err and "not a plain relative path" in r.err
        assert "archive" not in r.err
    assert not out.exists()
    run("export", "bad", "ok", "--to", str(out), "--root", local_root)
    assert (out / "ok.x").read_bytes() == b"2"


def test_tag_and_pin_of_an_unknown_dataset_say_there_is_no_such_dataset(
        tmp_path: Path, local_root: str, run: RunFn) -> None:
    base = ["--root", local_root]
    run("commit", "x", "--from", str(_folder(tmp_path)), *base)
    for args in (["tag", "nope", "v1"], ["tag", "nope@abc", "v1"], ["pin", "nope@v1"]):
        r = run(*args, *base, rc=1)
        assert r.err.startswith("dload: error: no dataset 'nope' under file://"), r.err
        assert "dload ls" in r.err
    r = run("tag", "x@v9", "v1", *base, rc=1)  # a known dataset keeps the version message
    assert "no dataset" not in r.err and "'v9'" in r.err


def test_commit_says_the_uploaded_bytes_of_a_shared_commit_are_its_manifest(
        tmp_path: Path, local_root: str, run: RunFn) -> None:
    base = ["--root", local_root]
    folder = str(_folder(tmp_path))
    first = run("commit", "a", "--from", folder, *base, "--json").json
    assert first["shard_bytes_uploaded"] == first["bytes"] > 0
    assert first["manifest_bytes_uploaded"] == first["bytes_uploaded"] - first["bytes"] > 0
    copy = run("commit", "b", "--from", folder, *base, "--json").json  # same data, other name
    assert copy["version"] != first["version"]
    assert copy["shards_uploaded"] == 0 and copy["shard_bytes_uploaded"] == 0
    assert copy["manifest_bytes_uploaded"] == copy["bytes_uploaded"] > 0
    text = run("commit", "c", "--from", folder, *base).out
    assert "uploaded 0 shards (all 1 already stored) and the" in text and "manifest" in text
    again = run("commit", "c", "--from", folder, *base).out
    assert "uploaded 0 shards and 0 bytes (this version was already stored)" in again
    # A stored version whose shard went missing: the recommit uploads the shard alone
    next(Path(local_root, "shards").rglob("*.parquet")).unlink()
    fixed = run("commit", "c", "--from", folder, *base, "--json").json
    assert fixed["shards_uploaded"] == 1 and fixed["manifest_bytes_uploaded"] == 0
    assert fixed["shard_bytes_uploaded"] == fixed["bytes_uploaded"] == fixed["bytes"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_demo_trains_the_steps_it_was_asked_for(tmp_path: Path) -> None:
    # 16 + 8 samples make under one batch of 32 per pass of the mix: it must repeat
    out = dload("demo", "--samples", "16", "--steps", "7", "--root", str(tmp_path / "r"),
                "--cache-dir", str(tmp_path / "c"), "--cache-budget", "1GB", "--json",
                cwd=Path.cwd()).json
    assert out["train"]["steps"] == 7 and out["train"]["samples"] == 7 * 32
    assert (tmp_path / "c" / "manifests").is_dir()  # the cache named (docs/CLI.md: all take it)
    r = dload("demo", "--steps", "0", cwd=Path.cwd(), rc=1)
    assert "Invalid value for '--steps'" in r.err


def test_tag_says_when_it_moves_an_existing_tag(tmp_path: Path, run: RunFn) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    v1 = repo.commit("d", [("a", {"x": 1})], progress=False).version
    v2 = repo.commit("d", [("a", {"x": 2})], progress=False).version
    root = ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "cache")]
    assert run("tag", f"d@{v1[:12]}", "v1", *root).out == f"tagged d@{v1[:12]} as v1\n"
    assert run("tag", "d", "v1", *root).out == f"moved tag v1 of d from {v1[:12]} to {v2[:12]}\n"
    assert repo.refs("d")["v1"] == v2


def test_tables_stay_aligned_after_wide_characters(capsys: pytest.CaptureFixture[str]) -> None:
    import unicodedata

    from dload_arrow.cli.output import print_table

    print_table([{"__key__": k, "txt": "v"} for k in ("ab", "日本語", "xyz", "e\u0301te")])
    lines = capsys.readouterr().out.splitlines()

    def column(line: str) -> int:  # the display column where "v" (or "txt") starts
        head = line[:line.rindex(" ") + 1]
        return sum(0 if unicodedata.combining(c) else
                   2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in head)

    assert len({column(ln) for ln in lines}) == 1, lines


def test_a_dangling_link_as_root_or_cache_dir_is_named_with_its_target(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    """QA env53: a link to a purged scratch folder was called "a file, not a directory" (the
    cache dir), and the root "does not exist yet (`dload commit` creates it)", then the
    commit failed saying "it is created if missing"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "root").symlink_to(tmp_path / "purged_root")
    (tmp_path / "cache").symlink_to(tmp_path / "purged_cache")
    gone = f"is a link to {tmp_path / 'purged_root'}, which does not exist"
    for args in (["ls"], ["status"], ["commit", "x", "--from", str(_folder(tmp_path))]):
        r = run(*args, "--root", "root", rc=1)
        assert gone in r.err and "(the root from argument root= / --root)" in r.err, r.err
    assert "root" in run("status", "--root", "root", rc=1).out  # the settings table first
    with pytest.raises(StorageError, match=gone):
        Repository.open(str(tmp_path / "root"))
    assert not (tmp_path / "purged_root").exists()  # nothing made where the link points
    out = run("status", "--root", str(tmp_path / "data"), "--cache-dir", "cache").out
    assert f"is a link to {tmp_path / 'purged_cache'}, which does not exist" in out
    assert "is a file" not in out


def test_a_file_as_root_names_where_the_setting_came_from(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notadir").write_text("x")
    (tmp_path / "dload.toml").write_text('root = "notadir"\n')
    monkeypatch.delenv("DLOAD_ROOT", raising=False)
    r = run("status", rc=1)
    assert f"(the root from {tmp_path / 'dload.toml'})" in r.err
    assert f"{tmp_path / 'notadir'}" in r.out  # the table, before the error


def test_status_reports_a_cache_dir_not_made_yet_without_making_it(
        tmp_path: Path, run: RunFn) -> None:
    """QA env53: `dload status` (and `cache status`) created the cache dir it reported on, so
    a mistyped cache_dir got a new cache (CACHEDIR.TAG, shards/)."""
    typo = tmp_path / "typo-cahce"
    for args in (["status"], ["cache", "status"]):
        got = run(*args, "--root", str(tmp_path / "r"), "--cache-dir", str(typo), "--json")
        cache = got.json["cache"] if args == ["status"] else got.json
        assert cache["used_bytes"] == 0 and cache["shards"] == 0
    assert not typo.exists()
