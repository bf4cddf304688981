"""Catalog, SQL and CLI-output findings of a QA pass: times beyond Python's years in `dload
sql`, samples() in a multi-statement query, derive and removals in the log, control characters
in names, JSON numbers and objects, describe() of decimals and durations, a long tag name."""

from __future__ import annotations

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

from dload_arrow import Repository, SqlError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def photos(local_root: str) -> Repository:
    repo = Repository.open(local_root)
    repo.commit("photos", pa.table({"__key__": ["a", "b", "c"], "x": [1, 2, 3]}), progress=False)
    return repo


# --- 1. a date or timestamp beyond Python's years prints as DuckDB's text of it ------------

_FAR = ("select date '9999-12-31' + 1 d, 'infinity'::timestamp t, date '-0100-01-01' b, "
        "timestamp '2000-01-01 10:00:00.5' + interval 10000 year y, date '2000-01-02' ok")


def test_times_python_cannot_hold_print_as_duckdbs_text(run: RunFn, photos: Repository) -> None:
    want = {"d": "10000-01-01", "t": "infinity", "b": "0101-01-01 (BC)",
            "y": "12000-01-01 10:00:00.5", "ok": "2000-01-02"}
    assert run("sql", _FAR, "--json").json == [want]
    assert run("sql", _FAR, "--csv").out.splitlines()[1] == ",".join(want.values())
    text = run("sql", _FAR).out
    assert all(v in text for v in want.values())
    direct = photos.sql("select d::varchar d, t::varchar t, b::varchar b, y::varchar y "
                        f"from ({_FAR})").to_pylist()[0]
    assert direct == {k: v for k, v in want.items() if k != "ok"}  # DuckDB's own text


def test_out_of_range_times_inside_lists_and_structs_print_as_text(
        run: RunFn, photos: Repository) -> None:
    got = run("sql", "select [date '9999-12-31' + 1, null, date '2000-01-01'] l, "
                     "{'a': '-infinity'::timestamptz, 'b': 1} s", "--json").json
    assert got == [{"l": ["10000-01-01", None, "2000-01-01"], "s": {"a": "-infinity", "b": 1}}]


# --- 2. samples() and $params in any statement of a multi-statement query -------------------

def test_samples_works_in_a_statement_before_the_last(run: RunFn, photos: Repository) -> None:
    q = ("create temp table t as select * from samples('photos') where x > $n; "
         "select count(*) c from t")
    assert run("sql", q, "--param", "n=1", "--json").json == [{"c": 2}]
    assert photos.sql(q, n=0).to_pylist() == [{"c": 3}]
    both = photos.sql("select * from samples('photos') where x = $a; "
                      "select count(*) c from samples('photos') where x > $b", a=1, b=2)
    assert both.to_pylist() == [{"c": 1}]


def test_a_parameter_missing_from_an_earlier_statement_is_named(photos: Repository) -> None:
    with pytest.raises(SqlError, match=r"parameters: n \(parameters given: \['m'\]\)"):
        photos.sql("select $n; select 1", m=1)


# --- 3. a derive that runs logs `derive`, as a memoized one does ----------------------------

def test_a_derive_that_runs_logs_derive(run: RunFn, photos: Repository) -> None:
    photos.derive("small", photos.dataset("photos").where("x < 3"))
    photos.derive("small", photos.dataset("photos").where("x < 3"), meta={"m": 1})  # memo
    log = photos.sql("select action from log where name = 'small' order by time").to_pylist()
    assert log == [{"action": "derive"}, {"action": "derive"}]
    assert photos.sql("select action from log where name = 'photos'").to_pylist() == [
        {"action": "commit"}]
    assert "derive" in run("log", "small").out


# --- 4. removals in the log; a removed dataset is said to be removed ------------------------

def test_removing_a_version_no_ref_points_at_is_in_the_log(run: RunFn, photos: Repository) -> None:
    mid = photos.append("photos", pa.table({"__key__": ["d"], "x": [4]}), progress=False)
    photos.append("photos", pa.table({"__key__": ["e"], "x": [5]}), progress=False)
    photos.rm("photos", mid.version)
    rows = photos.sql("select ref, action, previous, version, \"user\" from log "
                      "where name = 'photos' and action = 'rm'").to_pylist()
    assert len(rows) == 1 and rows[0]["ref"] is None and rows[0]["previous"] == mid.version
    assert rows[0]["version"] is None and rows[0]["user"]
    moves = photos.lineage("photos").to_dict()["moves"]
    assert [m["previous"] for m in moves if m["action"] == "rm"] == [mid.version]
    assert f"rm       {mid.version[:12]} removed" in run("log", "photos").out


def test_a_removed_dataset_is_said_to_be_removed_and_how_to_see_its_history(
        run: RunFn, photos: Repository) -> None:
    vid = photos.resolve("photos")
    photos.commit("other", pa.table({"__key__": ["a"], "x": [1]}), progress=False)
    photos.rm("photos")
    err = run("log", "photos", rc=1).err
    assert "dataset 'photos'" in err and "was removed (" in err and "Did you mean" not in err
    assert f"`dload log photos@{vid[:12]}`" in err
    assert vid[:12] in run("log", f"photos@{vid[:12]}").out  # what it suggests works
    assert "Did you mean 'other'" in run("log", "othr", rc=1).err  # a typo still reads so


# --- 7. control characters in keys and column names are escaped, as in values ---------------

def test_control_characters_in_keys_and_column_names_are_escaped(
        run: RunFn, local_root: str) -> None:
    repo = Repository.open(local_root)
    v1 = repo.commit("d", pa.table({"__key__": ["a"], "a\nb": [1], "c\td": ["x\ny"]}),
                     progress=False).version
    repo.append("d", pa.table({"__key__": ["k\nfake"], "a\nb": [2], "c\td": ["z"]}),
                progress=False)
    diff = run("diff", f"d@{v1[:12]}", "d@latest").out
    assert "    + k\\nfake\n" in diff
    for args in (("head", "d"), ("sql", "select * from samples('d')")):
        lines = run(*args).out.splitlines()
        assert len(lines) == 3 and lines[0].split() == ["__key__", "a\\nb", "c\\td"], lines
        assert lines[2].split() == ["k\\nfake", "2", "z"]
    info = run("info", "d").out
    assert "    a\\nb: int64\n" in info and "    c\\td: string\n" in info
    assert run("head", "d", "--json").json[1]["a\nb"] == 2  # JSON keeps the names as they are


# --- 5. --json: whole numbers as numbers, JSON columns as objects ---------------------------

def test_sql_json_gives_whole_numbers_as_numbers_and_json_columns_as_objects(
        run: RunFn, local_root: str) -> None:
    repo = Repository.open(local_root)
    repo.commit("p", pa.table({"__key__": ["a", "b"], "x": [885, 885]}),
                meta={"a": [1, 2]}, progress=False)
    q = ("select sum(x) s, meta, meta m2, 1.5 d, 12345678901234567890123::hugeint h, "
         "'{\"not\": 1}' t from samples('p'), versions group by meta")
    got = run("sql", q, "--json").json
    assert got == [{"s": 1770, "meta": {"a": [1, 2]}, "m2": {"a": [1, 2]}, "d": "1.5",
                    "h": "12345678901234567890123", "t": '{"not": 1}'}]  # exact, text: as is
    assert repo.sql("select meta from versions").schema.field("meta").metadata == {
        b"duckdb_type": b"JSON"}


# --- 8. describe(): exact min and max of decimal and duration columns when measured ----------

def test_describe_measures_decimal_and_duration_ends_exactly(repo: Repository) -> None:
    import datetime as dt
    from decimal import Decimal

    repo.commit("p", pa.table({
        "__key__": ["a", "b", "c"],
        "d": pa.array([Decimal("1.25"), Decimal("-3.50"), None], pa.decimal128(10, 2)),
        "t": pa.array([dt.timedelta(seconds=5), dt.timedelta(milliseconds=3), None],
                      pa.duration("ms")),
        "x": [1, 2, 3]}), progress=False)
    ds = repo.dataset("p")
    for got in (ds.describe(exact=True), ds.where("x > 0").describe()):
        rows = {r["column"]: r for r in got.to_pylist()}
        assert (rows["d"]["min"], rows["d"]["max"]) == (str(Decimal("-3.50")), "1.25")
        assert (rows["t"]["min"], rows["t"]["max"]) == (
            str(dt.timedelta(milliseconds=3)), str(dt.timedelta(seconds=5)))
        assert rows["d"]["nulls"] == rows["t"]["nulls"] == 1


# --- 9. a name refused for its length says the length limit ---------------------------------

def test_a_too_long_tag_or_name_is_refused_for_its_length(run: RunFn, photos: Repository) -> None:
    err = run("tag", "photos", "v" * 200, rc=1).err
    assert "(200 characters long: at most 128)" in err
    assert "(129 characters long: at most 128)" in run("head", "d" * 129, rc=1).err
    assert "characters long" not in run("tag", "photos", "bad/tag", rc=1).err
