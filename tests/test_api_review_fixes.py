"""Python API edges found by review: keys generated after a recommit that dropped rows, what
commit refuses up front (an empty column name, key= with pairs, a malformed parents=), and
reports that show as their text in a notebook."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from dload_arrow import ConfigError, Repository, SchemaError


def test_a_keyless_append_after_a_filtered_recommit_gets_new_keys(repo: Repository) -> None:
    repo.commit("e", pa.table({"x": [1, 2, 3]}), progress=False)
    repo.commit("e", repo.dataset("e").where("x >= 2").to_arrow(), progress=False)
    repo.append("e", pa.table({"x": [4]}), progress=False)
    got = repo.dataset("e").to_arrow().to_pylist()
    assert got == [{"__key__": "000000000001", "x": 2}, {"__key__": "000000000002", "x": 3},
                   {"__key__": "000000000003", "x": 4}]


@pytest.mark.parametrize("name", ["", "  "])
def test_a_column_without_a_name_is_refused(repo: Repository, name: str) -> None:
    with pytest.raises(SchemaError, match="needs a name"):
        repo.commit("n", [("a", {name: 1, "x": 2})], progress=False)


def test_key_with_pairs_is_refused(repo: Repository) -> None:
    with pytest.raises(SchemaError, match=r"key='id' .* these are \(key, dict\) pairs"):
        repo.commit("p", [("a", {"id": "q", "x": 1})], key="id", progress=False)
    repo.commit("p", [{"id": "q", "x": 1}], key="id", progress=False)  # dicts: the key column
    assert repo.dataset("p").get("q")["x"] == 1


@pytest.mark.parametrize(("parents", "words"), [
    ([{"dataset": "src", "version": "ab" * 32}], "each needs 'name'"),
    ([{"name": "src", "version": "abc"}], "not a sha256 hex digest"),
    ({"name": "src"}, "must be a list of dicts"),
])
def test_a_malformed_parents_argument_is_named(repo: Repository, parents: object,
                                                words: str) -> None:
    with pytest.raises(ConfigError, match="parents=") as e:
        repo.commit("d", [("a", {"x": 1})], parents=parents, progress=False)  # type: ignore[arg-type]
    assert words in str(e.value) and "corrupt" not in str(e.value)


def test_reports_show_their_text_in_a_notebook(repo: Repository) -> None:
    from IPython.lib.pretty import pretty

    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    ds = repo.dataset("d")
    for report in (ds.plan(), ds.pipeline().check(), repo.cache_status(), repo.pull("d")):
        assert pretty(report) == str(report)


def test_lineage_of_a_version_the_dataset_never_had_is_not_found(repo: Repository) -> None:
    from dload_arrow import NotFoundError

    repo.commit("d", pa.table({"x": [1, 2]}), progress=False)
    v2 = repo.append("d", pa.table({"x": [3]}), progress=False)
    repo.rm("d", v2.version)
    with pytest.raises(NotFoundError, match="never had version aaaaaaaaaaaa"):
        repo.lineage("d", "a" * 64)
    assert repo.lineage("d", v2.version).version == v2.version  # removed: its log knows it


def test_a_nanosecond_datetime64_parameter_binds_as_a_time(repo: Repository) -> None:
    import datetime as dt

    import numpy as np

    from dload_arrow import SqlError

    ts = pa.array([dt.datetime(2024, 1, 1), dt.datetime(2024, 6, 1)], pa.timestamp("ns"))
    repo.commit("ev", pa.table({"__key__": ["a", "b"], "ts": ts}), progress=False)
    t = repo.dataset("ev").to_arrow()["ts"].to_numpy()[1]  # datetime64[ns]
    assert repo.sql("SELECT $t AS t", t=t).to_pylist() == [{"t": dt.datetime(2024, 6, 1)}]
    got = repo.sql("SELECT count(*) AS n FROM samples('ev') WHERE ts >= $t", t=t)
    assert got.to_pylist() == [{"n": 1}]
    with pytest.raises(SqlError, match="finer part"):
        repo.sql("SELECT $t", t=np.datetime64("2024-06-01T00:00:00.000000001", "ns"))


def test_nanosecond_pyarrow_and_pandas_parameters_are_not_cut_to_microseconds(
        repo: Repository) -> None:
    """A pyarrow timestamp[ns]/time64[ns] scalar or a pd.Timestamp was bound without its
    nanoseconds and matched another row (QA sql 42)."""
    import numpy as np
    import pandas as pd

    from dload_arrow import SqlError

    ts = pa.array([1_700_000_000_000_000_000, 1_700_000_000_000_000_007], pa.timestamp("ns"))
    tod = pa.array([36_000_000_000_000, 36_000_000_000_500], pa.time64("ns"))
    repo.commit("ev", pa.table({"__key__": ["a", "b"], "t": ts, "tod": tod}), progress=False)
    table = repo.dataset("ev").to_arrow()
    for column, value in (("t", table["t"][1]), ("t", pd.Timestamp(table["t"][1].value)),
                          ("tod", table["tod"][1])):
        with pytest.raises(SqlError, match="finer part"):
            repo.sql(f"SELECT __key__ FROM samples('ev') WHERE {column} = $v", v=value)
    whole = repo.sql("SELECT __key__ FROM samples('ev') WHERE t = $v", v=table["t"][0])
    assert whole.column(0).to_pylist() == ["a"]  # a whole microsecond binds as before
    assert repo.sql("SELECT $v AS v", v=pd.Timestamp("2024-01-01 10:00")).num_rows == 1
    # arrays and lists of them, durations, and the zoned advice (review 43)
    flat = table["t"].combine_chunks()
    for value in (table["t"], flat, pd.Timedelta(1007, "ns"),
                  pa.scalar([table["t"][1].value], pa.list_(pa.timestamp("ns"))),
                  flat.dictionary_encode(), flat.dictionary_encode()[1],  # (review 44)
                  pa.StructArray.from_arrays([flat], ["t"]), flat.to_numpy()):
        with pytest.raises(SqlError, match="finer part"):
            repo.sql("SELECT $v AS v", v=value)
    zoned = pa.scalar(table["t"][1].value, pa.timestamp("ns", "UTC"))
    with pytest.raises(SqlError, match="TIMESTAMPTZ_NS") as e:
        repo.sql("SELECT $v AS v", v=zoned)
    assert ".000000007" in str(e.value)  # the value as it is, not cut
    for null in (pd.NaT, np.datetime64("NaT", "ns")):  # NULL, as before (not refused)
        got = repo.sql("SELECT __key__ FROM samples('ev') WHERE t = $v", v=null)
        assert got.num_rows == 0
    cut = repo.sql("SELECT __key__ FROM samples('ev') WHERE t IN (SELECT unnest($v))",
                   v=table["t"].slice(0, 1))
    assert cut.column(0).to_pylist() == ["a"]


def test_a_numpy_timedelta_parameter_binds_as_an_interval(repo: Repository) -> None:
    """DuckDB refused np.timedelta64 at any unit (review 44); a finer part than a microsecond
    and a month (no fixed length) are refused with what to do."""
    import datetime as dt

    import numpy as np

    from dload_arrow import SqlError

    for value in (np.timedelta64(1, "s"), np.timedelta64(1_000_000_000, "ns")):
        got = repo.sql("SELECT $v = INTERVAL 1 SECOND AS same", v=value).to_pylist()
        assert got == [{"same": True}], value
    assert repo.sql("SELECT $v AS v", v=np.timedelta64("NaT")).to_pylist() == [{"v": None}]
    assert repo.sql("SELECT $v AS v", v=dt.timedelta(seconds=1)).num_rows == 1
    with pytest.raises(SqlError, match="finer part"):
        repo.sql("SELECT $v", v=np.timedelta64(1_000_000_001, "ns"))
    with pytest.raises(SqlError, match="no fixed length"):
        repo.sql("SELECT $v", v=np.timedelta64(1, "M"))


def test_find_version_takes_the_name_at_version_it_advises(repo: Repository) -> None:
    from dload_arrow import InvalidNameError

    v = repo.commit("photos", pa.table({"x": [1]}), progress=False)
    repo.tag("photos", v.version, "v1")
    with pytest.raises(InvalidNameError, match="give NAME@VERSION"):
        repo.find_version("v1")
    assert repo.find_version("photos@v1") == ("photos", v.version)
    assert repo.find_version(f"photos@{v.version[:8]}") == ("photos", v.version)
    with pytest.raises(InvalidNameError, match=r"repo\.dataset\('photos', 'v1'\)"):
        repo.dataset("photos@v1")


def test_cache_status_counts_downloads_in_progress(s3_repo: Repository) -> None:
    """A download's reservation (its temp file, named with the shard's size) counts in the
    budget; status shows it as used and being downloaded, as admission counts it."""
    import os

    s3_repo.commit("d", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    cache = s3_repo.read_context.cache()
    digest = s3_repo.dataset("d").manifest.shards[0].digest
    final = cache.shard_file(digest)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    from dload_arrow.read.locks import FileLock

    with open(f"{final}.tmp-5000000-abcdef012345", "wb"):  # a download that has just begun
        pass  # (its downloader holds the download lock: a killed one's is free, QA
    live = FileLock.acquire(cache._lock_file(digest), exclusive=True)  # sharedcache63)
    try:
        status = s3_repo.cache_status()
    finally:
        live.release()
    assert status.downloading_bytes == 5_000_000
    assert status.used_bytes >= 5_000_000 and status.shards == 0
    assert "5.0 MB being downloaded" in str(status)


def test_a_hold_says_whether_its_acquire_downloaded_the_shard(s3_repo: Repository) -> None:
    s3_repo.commit("d", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    shard = s3_repo.dataset("d").manifest.shards[0]
    cache = s3_repo.read_context.cache()
    first = cache.acquire(s3_repo.storage, shard.digest, shard.bytes)
    again = cache.acquire(s3_repo.storage, shard.digest, shard.bytes)
    assert (first.downloaded, again.downloaded) == (True, False)  # pull counts only the first
    first.release()
    again.release()
    report = s3_repo.pull("d")  # everything is there: nothing fetched, and it says so
    assert (report.shards_fetched, report.bytes_fetched) == (0, 0)


def test_untag_deletes_a_tag_and_keeps_its_version(repo: Repository,
                                                   capsys: pytest.CaptureFixture[str],
                                                   local_root: str) -> None:
    from cli_run import runner

    from dload_arrow import InvalidNameError, NotFoundError

    v = repo.commit("d", [("a", {"x": 1})], progress=False)
    repo.tag("d", v.version, "oops")
    assert repo.untag("d", "oops") == v.version
    assert "oops" not in repo.refs("d") and repo.dataset("d").version == v.version
    assert [e.action for e in repo.log("d")][-1] == "delete"
    with pytest.raises(NotFoundError, match="has no tag 'oops'"):
        repo.untag("d", "oops")
    with pytest.raises(InvalidNameError, match="managed by commits"):
        repo.untag("d", "latest")
    run = runner(capsys, ["--root", local_root])
    run("tag", "d", "v1")
    assert run("tag", "d", "v1", "--delete", "--json").json["deleted"] == v.version
    assert "v1" not in repo.refs("d")


def test_keyless_append_counts_row_numbers_in_a_shard_with_other_keys(
        repo: Repository) -> None:
    repo.commit("e", pa.table({"__key__": ["a", "b", "c"], "x": [1, 2, 3]}), progress=False)
    repo.append("e", pa.table({"x": [4, 5, 6]}), progress=False)  # 000000000003..5
    repo.commit("e", repo.dataset("e").where("x >= 3").to_arrow(), progress=False)
    assert repo.dataset("e").manifest.shards[0].key_max == "c"  # hides the row numbers
    repo.append("e", pa.table({"x": [7]}), progress=False)
    assert repo.dataset("e").get("000000000006")["x"] == 7


def test_s3_client_retries_are_capped_unless_given() -> None:
    from dload_arrow.storage.shared_fs import s3_filesystem

    assert s3_filesystem({"endpoint_url": "http://127.0.0.1:1"}).retries == 2
    assert s3_filesystem({"endpoint_url": "http://127.0.0.1:1", "retries": 10}).retries == 10


def test_the_documented_retries_storage_option_works_on_a_real_request(
        s3_root: str, tmp_path: Path) -> None:
    """QA: the TUTORIAL's storage_options={"retries": 5} went on to s3fs's constructor, and
    every request of that root failed (AioSession got an unexpected keyword 'retries')."""
    repo = Repository.open(s3_root, cache_dir=tmp_path / "c", storage_options={"retries": 5})
    repo.commit("r", [("k", {"x": 1})], progress=False)
    assert repo.dataset("r").get("k")["x"] == 1
    assert repo.storage.fs.retries == 5  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"retries must be a whole number .* got 'five'"):
        Repository.open(s3_root, storage_options={"retries": "five"})
