"""QA shell59: dload scripted from shell and CI. A commit into a read-only root whose shard was
already stored was "an internal error"; two tags at once both said the tag was new; --json
dropped the commit's warnings from stderr; a full disk under stdout was "a bug"; ls showed
nothing of a pin whose dataset was removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository

DLOAD = str(Path(sys.executable).with_name("dload"))


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_commit_into_a_root_it_cannot_write_is_a_user_error(
        tmp_path: Path, local_root: str, cache_dir: str) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to make a stored shard one this user cannot touch")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("hello")
    env = dict(os.environ, DLOAD_CACHE_DIR=cache_dir)
    first = subprocess.run([DLOAD, "commit", "one", "--from", str(src), "--root", local_root],
                           env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    for folder, _dirs, files in os.walk(local_root):  # another user's files, read-only
        for name in files:
            os.chown(os.path.join(folder, name), 65534, 65534)
            os.chmod(os.path.join(folder, name), 0o444)
    try:
        r = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner",
                            "--inh-caps=-all", DLOAD, "commit", "two", "--from", str(src),
                            "--root", local_root], env=env, capture_output=True, text=True)
    finally:
        for folder, _dirs, files in os.walk(local_root):
            for name in files:
                os.chown(os.path.join(folder, name), 0, 0)
                os.chmod(os.path.join(folder, name), 0o644)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("dload: error:") and "this is a bug" not in r.stderr
    assert "directory you can write" in r.stderr and "Traceback" not in r.stderr


def test_a_tag_says_what_its_own_move_replaced(local_root: str) -> None:
    repo = Repository.open(local_root)
    v1 = repo.commit("d", [("a", {"x": 1})], progress=False).version
    v2 = repo.commit("d", [("a", {"x": 2})], progress=False).version
    assert repo.tag_replacing("d", v1, "prod") == (v1, None)
    other = Repository.open(local_root)  # another process's move, unseen by this one
    other.tag("d", v2, "prod")
    assert repo.tag_replacing("d", v1, "prod") == (v1, v2)
    assert repo.tag_replacing("d", v1, "prod") == (v1, v1)  # already there: nothing moved


def test_two_tags_at_once_never_both_say_new(local_root: str) -> None:
    repo = Repository.open(local_root)
    versions = [repo.commit("d", [("a", {"x": i})], progress=False).version for i in range(2)]
    for round_ in range(12):
        tag = f"t{round_}"
        gate = threading.Barrier(2)
        got: dict[int, str | None] = {}

        def move(i: int, tag: str = tag, gate: threading.Barrier = gate,
                 got: dict[int, str | None] = got) -> None:
            mine = Repository.open(local_root)
            gate.wait()
            got[i] = mine.tag_replacing("d", versions[i], tag)[1]

        threads = [threading.Thread(target=move, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        final = repo.refs("d")[tag]
        winner = versions.index(final)  # the last move: it replaced the other's tag
        assert got[winner] == versions[1 - winner] and got[1 - winner] is None, got


def test_json_keeps_the_commits_warnings_on_stderr(run: RunFn, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("k,v\na,1\nb,2\n")
    run("commit", "t", "--from", str(table))
    r = run("append", "t", "--from", str(table), "--json")
    assert r.json["repeats_rows_before"] == 2
    assert "rows appended equal" in r.err and "--yes` undoes it" in r.err
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("x")
    r = run("commit", "s", "--from", str(src), "--exclude", "nomatch", "--json")
    assert r.json["source"]["unused_globs"] and "'nomatch'" in r.err and "matched no file" in r.err


def test_a_full_disk_under_stdout_is_a_user_error(tmp_path: Path, local_root: str,
                                                  cache_dir: str) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("x")
    env = dict(os.environ, DLOAD_CACHE_DIR=cache_dir)
    with open("/dev/full", "w") as full:
        r = subprocess.run([DLOAD, "commit", "f", "--from", str(src), "--root", local_root,
                            "--json"], env=env, stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 1 and "a write failed: No space left" in r.stderr, r.stderr
    assert "this is a bug" not in r.stderr
    assert Repository.open(local_root).datasets() == ["f"]  # published before the output


def test_ls_shows_a_pin_of_a_removed_dataset_as_gone(
        run: RunFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("x")
    run("commit", "keep", "--from", str(src))
    run("commit", "photos", "--from", str(src), "--meta", "k=1")
    run("pin", "photos")
    run("rm", "photos", "--yes")
    rows = {r["name"]: r for r in run("ls", "--json").json}
    assert rows["photos"]["pinned"]["exists"] is False and rows["keep"]["pinned"] is None
    text = run("ls").out
    assert "(gone)" in text and "photos" in text


def test_the_unknown_variable_warning_lists_no_test_hook(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dload_arrow.config_values as cv

    monkeypatch.setenv("DLOAD_CACHEBUDGET", "1GB")
    monkeypatch.setattr(cv, "_WARNED", set())
    with pytest.warns(UserWarning, match="did you mean DLOAD_CACHE_BUDGET") as w:
        cv.warn_unknown_env()
    assert "DLOAD_CRASH_AT" not in str(w[0].message)


def test_ls_json_gives_a_removed_pinned_dataset_no_version(
        run: RunFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("x")
    run("commit", "e", "--from", str(src))
    run("pin", "e")
    run("rm", "e", "--yes")
    (row,) = run("ls", "--json").json
    assert row["name"] == "e" and row["version"] is None and row["rows"] is None


def test_diff_values_compares_numbers_by_value(run: RunFn, local_root: str) -> None:
    import pyarrow as pa

    repo = Repository.open(local_root)
    v1 = repo.commit("d", pa.table({"__key__": ["a", "b", "c"], "x": [1, 2, 3]}),
                     progress=False).version
    v2 = repo.commit("d", pa.table({"__key__": ["a", "b", "c"], "x": [1.0, 2.5, 3.0]}),
                     progress=False).version
    out = run("diff", f"d@{v1}", f"d@{v2}", "--values", "--json").json
    assert out["changed"] == ["b"] and out["in_both_unshared"] == 3


def test_diff_values_compares_decimals_by_value(run: RunFn, local_root: str) -> None:
    import decimal

    import pyarrow as pa

    repo = Repository.open(local_root)
    v1 = repo.commit("d", pa.table({"__key__": ["a", "b"], "x": [1, 2]}), progress=False).version
    v2 = repo.commit("d", pa.table({"__key__": ["a", "b"], "x": pa.array(
        [decimal.Decimal(1), decimal.Decimal("2.5")], pa.decimal128(10, 2))}),
        progress=False).version
    assert run("diff", f"d@{v1}", f"d@{v2}", "--values", "--json").json["changed"] == ["b"]


def test_float32_values_print_as_their_shortest_decimals(run: RunFn, local_root: str) -> None:
    import pyarrow as pa

    Repository.open(local_root).commit("f", pa.table({"x": pa.array([1.05, None, float("nan")],
                                                                     pa.float32())}),
                                       progress=False)
    rows = run("head", "f", "--json").json
    assert rows[0]["x"] == 1.05 and rows[1]["x"] is None
    assert "1.05" in run("head", "f").out and "1.0499999523162842" not in run("head", "f").out
    assert run("sql", "select x from samples('f') limit 1", "--json").json == [{"x": 1.05}]
    Repository.open(local_root).commit("g", pa.table({  # inside lists and structs too
        "e": pa.array([[1.05, 0.1]], pa.list_(pa.float32())),
        "s": pa.array([{"a": 1.05}], pa.struct([("a", pa.float32())]))}), progress=False)
    (row,) = run("head", "g", "--json").json
    assert row["e"] == [1.05, 0.1] and row["s"] == {"a": 1.05}


def test_like_in_where_names_the_range_that_does_it(local_root: str) -> None:
    import pyarrow as pa

    from dload_arrow.errors import PredicateError

    repo = Repository.open(local_root)
    repo.commit("k", pa.table({"__key__": ["spk01/a", "spk01/b", "spk02/a"], "x": [1, 2, 3]}),
                progress=False)
    with pytest.raises(PredicateError, match=r"a prefix is a range \(__key__ >= 'spk01/' and "
                                             r"__key__ < 'spk010'"):
        repo.dataset("k").where("__key__ LIKE 'spk01/%'")
    got = repo.dataset("k").where("__key__ >= 'spk01/' and __key__ < 'spk010'")
    assert [s["__key__"] for s in got.samples()] == ["spk01/a", "spk01/b"]
