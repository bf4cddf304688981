"""Catalog QA round 10: SQL reads times in UTC whatever TZ says, log/info escape what users
wrote, one damaged manifest hides nothing else, samples() found past DuckDB's other string and
comment forms, unpublished commits stay out of the views, diff names a removed version."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl

_ZONED_SQL = """
import datetime as dt, json, sys
import pyarrow as pa
import dload_arrow as dl
repo = dl.Repository.open(sys.argv[1], cache_dir=sys.argv[2])
times = [dt.datetime(2024, 1, 21, h, tzinfo=dt.timezone.utc) for h in range(0, 24, 2)]
repo.commit("ev", pa.table({"__key__": [f"e{h:02d}" for h in range(12)],
                            "ts": pa.array(times, pa.timestamp("us", tz="UTC"))}),
            progress=False)
cond = "ts >= '2024-01-21 12:00:00'"
print(json.dumps({
    "where": repo.dataset("ev").where(cond).to_arrow().num_rows,
    "sql": repo.sql(f"select count(*) as n from samples('ev') where {cond}")
    .to_pylist()[0]["n"],
    "log": repo.lineage("ev").to_dict()["moves"][0]["time"],
}))
"""


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo"])
def test_sql_reads_a_zoneless_time_as_utc_in_any_local_zone(tmp_path: Path, zone: str) -> None:
    import json

    out = subprocess.run(
        [sys.executable, "-c", _ZONED_SQL, str(tmp_path / "r"), str(tmp_path / "c")],
        env=dict(os.environ, TZ=zone), capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert got["where"] == got["sql"] == 6, got
    assert got["log"].endswith("+00:00"), got  # log --json in UTC, as CLI.md says


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_log_and_info_escape_a_relation_and_a_user_that_hold_newlines(
        run: RunFn, repo: dl.Repository, monkeypatch: pytest.MonkeyPatch) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    forged = "derive\n  <- 9 derive  fake @ 000000000000 (99 rows)"
    repo.commit("b", [("k", {"x": 2})], progress=False,
                parents=[{"name": "a", "version": a.version, "relation": forged}])
    log = run("log", "b").out
    assert "derive\\n  <- 9 derive" in log and "\n  <- 9" not in log
    info = run("info", "b").out
    assert "(derive\\n  <- 9 derive" in info
    monkeypatch.setenv("LOGNAME", "bob\n  2026-01-01 00:00:00  latest  rm  by eve")
    monkeypatch.setenv("USER", "bob\n  2026-01-01 00:00:00  latest  rm  by eve")
    repo.commit("c", [("k", {"x": 3})], progress=False)
    log = run("log", "c").out
    assert "by bob\\n  2026-01-01" in log and "\n  2026-01-01 00:00:00  latest  rm" not in log
    when = next(line for line in log.splitlines() if "commit" in line)
    assert when.split()[1].endswith("Z"), when  # ref moves in UTC, marked as such
    assert dt.datetime.now(dt.UTC).strftime("%Y-%m-%d") in when


def test_a_damaged_manifest_of_another_dataset_hides_neither_log_nor_ls(
        run: RunFn, repo: dl.Repository, local_root: str) -> None:
    repo.commit("good", [("a", {"x": 1})], progress=False)
    repo.append("good", [("b", {"x": 2})], progress=False)
    old = repo.commit("other", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    new = repo.commit("other", [(f"k{i}", {"x": i}) for i in range(20)], progress=False)

    def damage(vid: str) -> None:
        path = Path(local_root) / "datasets" / "other" / "manifests" / f"{vid}.arrow"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    damage(old.version)
    fresh = dl.Repository.open(local_root, cache_dir=str(Path(local_root).parent / "c2"))
    with pytest.warns(UserWarning, match="leaves out a version of 'other'"):
        assert [r["relation"] for r in fresh.lineage("good").parents] == ["append"]
    r = run("log", "good")
    assert "<- 1 append  good @" in r.out and "leaves out a version of 'other'" in r.err
    damage(new.version)
    r = run("ls", "--cache-dir", str(Path(local_root).parent / "c3"))  # not the cached copy
    listed = {line.split()[0]: line.split()[2] for line in r.out.splitlines()[1:]}
    assert listed == {"good": "2", "other": "-"}, r.out
    assert f"manifest {new.version[:12]} is corrupt" in r.err


def test_samples_calls_are_found_past_dollar_strings_escape_strings_and_nested_comments(
        repo: dl.Repository) -> None:
    repo.commit("photos", [(f"k{i}", {"caption": "it's" if i % 2 else "x"}) for i in range(10)],
                progress=False)

    def one(q: str) -> dict[str, object]:
        rows = repo.sql(q).to_pylist()
        assert len(rows) == 1, rows
        return rows[0]

    assert one("select $$it's$$ as q, count(*) as n from samples('photos') "
               "where caption = q") == {"q": "it's", "n": 5}
    assert one("select $t$it's$t$ as q, count(*) as n from samples('photos') "
               "where caption = q") == {"q": "it's", "n": 5}
    assert one("select count(*) as n from (select E'it\\'s' as q) join samples('photos') "
               "on caption = q") == {"n": 5}
    assert one("select $$samples('other')$$ as note") == {"note": "samples('other')"}
    assert one("select count(*) as n from samples('photos') "
               "/* was: /* v1 */ samples('photos_old') */") == {"n": 10}
    assert repo.sql("select count(*) as n from samples('photos') where caption = $c",
                    c="x").to_pylist() == [{"n": 5}]


def test_the_datasets_view_leaves_out_a_first_commit_that_did_not_finish(
        repo: dl.Repository, local_root: str, cache_dir: str) -> None:
    repo.commit("d", [("a", {"x": 1})], progress=False)
    code = ("import dload_arrow as dl, sys; r = dl.Repository.open(sys.argv[1], "
            "cache_dir=sys.argv[2]); r.commit('newds', [('b', {'x': 2})], progress=False)")
    p = subprocess.run([sys.executable, "-c", code, local_root, cache_dir],
                       env=dict(os.environ, DLOAD_CRASH_AT="manifest"), capture_output=True)
    assert p.returncode != 0  # killed after its manifest was stored, before `latest` moved
    assert repo.datasets() == ["d"]
    assert repo.sql("select name from datasets").column("name").to_pylist() == ["d"]
    with pytest.raises(dl.NotFoundError, match="1 unpublished version"):
        repo.dataset("newds")


def test_diff_with_a_bare_removed_version_of_the_first_dataset_says_it_was_removed(
        run: RunFn, repo: dl.Repository) -> None:
    v1 = repo.commit("d", [("a", {"x": 1})], progress=False).version
    v2 = repo.commit("d", [("b", {"x": 2})], progress=False).version
    repo.rm("d", v1)
    err = run("diff", f"d@{v2[:8]}", v1[:8], rc=1).err
    assert f"version {v1[:12]} was removed by" in err and "neither a dataset" not in err
    err = run("diff", f"d@{v2[:8]}", "0" * 8, rc=1).err
    assert "neither a dataset nor a version id" in err  # unknown: the general text, as before


@pytest.mark.parametrize("text", ["null IS NULL", "true IS NOT NULL", "true IN (1, 2)",
                                  "true BETWEEN 1 AND 2"])
def test_a_column_named_like_a_keyword_gets_the_quoting_hint_in_every_form(
        repo: dl.Repository, text: str) -> None:
    import pyarrow as pa

    repo.commit("k", pa.table({"__key__": ["a", "b"], "null": [1, None], "true": [1, 2]}),
                progress=False)
    word = text.split()[0]
    with pytest.raises(dl.PredicateError, match=f"if you meant the column '{word}', "
                                                f"double-quote it: \"{word}\""):
        repo.dataset("k").where(text).to_arrow()
    fixed = repo.dataset("k").where(text.replace(word, f'"{word}"', 1)).to_arrow()
    assert fixed.num_rows >= 1


def test_a_dollar_inside_an_identifier_starts_no_string(repo: dl.Repository) -> None:
    repo.commit("photos", [(f"k{i}", {"x": i}) for i in range(4)], progress=False)
    rows = repo.sql("select count(*) as a$b$c from samples('photos')").to_pylist()
    assert rows == [{"a$b$c": 4}]


def test_a_version_removed_recommitted_and_removed_again_logs_both_removals(
        repo: dl.Repository) -> None:
    rows = [("a", {"x": 1})]
    v1 = repo.commit("d", rows, progress=False).version
    repo.commit("d", [("b", {"x": 2})], progress=False)
    repo.rm("d", v1)
    first = repo.sql("select max(time) as t from log where action = 'rm'").to_pylist()[0]["t"]
    assert repo.commit("d", rows, progress=False).version == v1  # published again
    repo.commit("d", [("c", {"x": 3})], progress=False)
    repo.rm("d", v1)
    removals = repo.sql("select time from log where action = 'rm' and previous = $v "
                        "order by time", v=v1).column("time").to_pylist()
    assert len(removals) == 2 and removals[0] == first < removals[1]
    from dload_arrow.store.removals import removal_path

    assert repo.storage.exists(removal_path("d", v1, 2))  # the first record stays as it was
    repo.rm("d", repo.refs("d")["latest"])  # an rm of another version: no third record
    assert repo.sql("select count(*) as n from log where action = 'rm' and previous = $v",
                    v=v1).to_pylist() == [{"n": 2}]
    with pytest.raises(dl.NotFoundError, match=f"version {v1[:12]} was removed by"):
        repo.dataset("d", v1[:12])
