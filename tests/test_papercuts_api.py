"""API papercuts from QA: argument checks, catalog SQL that broke the session, a cache dir
under a file, and the text `dload pull` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dload_arrow import ConfigError, Repository, SqlError
from dload_arrow.cli.main import main


@pytest.fixture
def pipe(repo: Repository) -> Any:
    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(20)], progress=False)
    return repo.dataset("a").pipeline()


@pytest.mark.parametrize("bad", ["3", 2.7, True, None])
def test_set_epoch_refuses_what_is_not_an_int(pipe: Any, bad: Any) -> None:
    with pytest.raises(TypeError, match=rf"set_epoch\(epoch={bad!r}\): epoch must be an int"):
        pipe.set_epoch(bad)


def test_set_epoch_refuses_a_negative_epoch_and_takes_numpy_ints(pipe: Any) -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(ValueError, match=r"set_epoch\(epoch=-1\): epoch must be >= 0"):
        pipe.set_epoch(-1)
    pipe.set_epoch(np.int64(3))
    assert pipe.state_dict()["epoch"] == 3 and type(pipe.state_dict()["epoch"]) is int


@pytest.mark.parametrize("op", ["skip", "take", "repeat"])
def test_counts_are_ints_at_least_zero(pipe: Any, op: str) -> None:
    name = "times" if op == "repeat" else "n"
    with pytest.raises(TypeError, match=rf"{op}\({name}=1.5\): {name} must be an int >= 0"):
        getattr(pipe, op)(1.5)
    with pytest.raises(ValueError, match=rf"{op}\({name}=-2\): {name} must be >= 0"):
        getattr(pipe, op)(-2)
    assert len(list(getattr(pipe, op)(1))) == {"skip": 19, "take": 1, "repeat": 20}[op]


def test_torch_set_epoch_refuses_what_is_not_an_int(pipe: Any) -> None:
    pytest.importorskip("torch")
    from dload_arrow.torch import as_iterable_dataset

    with pytest.raises(TypeError, match=r"set_epoch\(epoch='3'\)"):
        as_iterable_dataset(pipe).set_epoch("3")  # type: ignore[arg-type]


# --- catalog SQL -----------------------------------------------------------------------------


@pytest.mark.parametrize("query", [
    "DROP VIEW datasets",
    "CREATE OR REPLACE VIEW datasets AS SELECT 1 AS x",
    "CREATE TEMP VIEW versions AS SELECT 1 AS x",
    "DROP VIEW dload_raw_versions",
])
def test_a_query_cannot_break_the_built_in_views(pipe: Any, repo: Repository,
                                                 query: str) -> None:
    repo.sql("CREATE TABLE mine AS SELECT 1 AS y")  # a query may create its own objects
    assert repo.sql("SELECT y FROM mine").column("y").to_pylist() == [1]
    with pytest.raises(SqlError, match=r"built-in view.*read-only"):
        repo.sql(query)
    assert repo.sql("SELECT name, num_rows FROM datasets").to_pylist() == [
        {"name": "a", "num_rows": 20}]
    assert repo.sql("SELECT count(*) AS n FROM versions").column("n").to_pylist() == [1]


@pytest.mark.parametrize("query", ["", "   ", ";", "-- nothing\n"])
def test_an_empty_query_is_refused(repo: Repository, query: str) -> None:
    with pytest.raises(SqlError, match="empty query"):
        repo.sql(query)


# --- the cache dir ---------------------------------------------------------------------------


def test_a_cache_dir_under_a_file_names_the_cache_dir_and_the_fix(
        tmp_path: Path, memory_root: str) -> None:
    afile = tmp_path / "afile"
    afile.write_bytes(b"")
    cache = afile / "cache"
    repo = Repository.open(memory_root, cache_dir=str(cache))  # a root that streams via cache
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(5)], progress=False)
    with pytest.raises(ConfigError) as e:
        repo.dataset("d").get("k1")
    text = str(e.value)
    assert f"cannot use the cache dir {cache}" in text
    assert f"{afile} is a file, not a directory" in text
    assert "DLOAD_CACHE_DIR" in text and "--cache-dir" in text
    with pytest.raises(ConfigError, match="cannot use the cache dir"):
        repo.cache_status()


def test_the_cache_dir_error_says_where_the_setting_came_from(tmp_path: Path) -> None:
    from dload_arrow.read.context import cache_dir_error

    err = cache_dir_error(str(tmp_path / "c"), PermissionError(13, "Permission denied"),
                          "DLOAD_CACHE_DIR")
    assert f"cache dir {tmp_path / 'c'} (from DLOAD_CACHE_DIR): Permission denied" in str(err)


# --- dload pull ------------------------------------------------------------------------------


def test_pull_prints_one_readable_line(pipe: Any, local_root: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["pull", "a", "--root", local_root]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("a@"), out
    assert "read in place (1 shard, " in out and "seconds" not in out and "bytes_total" not in out


def test_pull_text_for_a_download_and_for_a_cached_version() -> None:
    from dload_arrow.cli.data import pull_text

    r = {"name": "d", "version": "ab" * 32, "shards_total": 3, "shards_fetched": 2,
         "bytes_total": 4_100_000, "bytes_fetched": 3_000_000, "seconds": 0.001343200001,
         "in_place": False}
    assert pull_text(r) == (f"d@{'ab' * 6}: in the cache (3 shards, 4.1 MB); downloaded "
                            "2 shards (3.0 MB) in 0.00s")
    cached = {**r, "shards_fetched": 0, "bytes_fetched": 0}
    assert pull_text(cached) == f"d@{'ab' * 6}: already in the cache (3 shards, 4.1 MB); " \
                                "nothing downloaded"


def test_pull_json_is_the_report(pipe: Any, local_root: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    import json

    capsys.readouterr()
    assert main(["pull", "a", "--root", local_root, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got) == {"name", "version", "shards_total", "shards_fetched", "bytes_total",
                        "bytes_fetched", "seconds", "in_place", "shards_resident"}
