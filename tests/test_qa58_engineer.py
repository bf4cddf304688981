"""A data engineer's week (QA eng58): keys lost by a derive, codes read as numbers, other
delimiters, unused SQL parameters."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from dload_arrow import Repository


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    r = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    r.commit("people", [("007", {"name": "Ann", "age": 31}), ("009", {"name": "Cy", "age": 45})],
             progress=False)
    return r


@pytest.mark.parametrize("how", ["select", "map"])
def test_a_derive_that_drops_the_keys_warns(repo: Repository, how: str) -> None:
    """The sources' keys became row numbers without a word."""
    ds = repo.dataset("people")
    pipe = (ds.pipeline().select(["name"]) if how == "select"
            else ds.pipeline().map(lambda r: {"name": r["name"].upper()}))
    with pytest.warns(UserWarning, match=r"items carry no __key__ .* keyed by position"):
        repo.derive(f"clean-{how}", pipe)
    assert repo.dataset(f"clean-{how}").to_arrow().column("__key__").to_pylist() == [
        "000000000000", "000000000001"]
    with warnings.catch_warnings():  # keys kept: nothing to say
        warnings.simplefilter("error")
        repo.derive("kept", ds.pipeline().select(["__key__", "name"]))
    assert repo.dataset("kept").to_arrow().column("__key__").to_pylist() == ["007", "009"]


def test_codes_read_as_numbers_are_warned_of_and_kept_as_text_on_request(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """ZIP codes and phone numbers became 1234 and 4930123.0 without a word."""
    from cli_run import runner

    (tmp_path / "a.csv").write_text("id,zip,phone,n\n1,01234,+4930123,5\n2,02139,+4940999,0\n")
    run = runner(capsys, ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")])
    r = run("commit", "a", "--from", str(tmp_path / "a.csv"), "--key-column", "id")
    assert ("zip ('01234' read as 1234), phone ('+4930123' read as 4930123.0) hold codes "
            "written with leading zeros or a sign") in r.err
    assert "--text-column zip --text-column phone (CLI)" in r.err and "n (" not in r.err
    run("commit", "b", "--from", str(tmp_path / "a.csv"), "--key-column", "id",
        "--text-column", "zip", "--text-column", "phone")
    got = Repository.open(tmp_path / "root", cache_dir=tmp_path / "c").dataset("b").to_arrow()
    assert got.column("zip").to_pylist() == ["01234", "02139"]
    assert got.column("phone").to_pylist() == ["+4930123", "+4940999"]
    assert got.column("n").to_pylist() == [5, 0]
    r = run("commit", "c", "--from", str(tmp_path / "a.csv"), "--text-column", "zip",
            "--as", "files", rc=1)
    assert "--text-column are for tables" in r.err


def test_another_delimiter_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from cli_run import runner

    run = runner(capsys, ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")])
    (tmp_path / "semi.csv").write_text("id;name;amount\n1;Ann;1,5\n")
    r = run("commit", "s", "--from", str(tmp_path / "semi.csv"), rc=1)
    assert "the header holds no comma but ';'" in r.err
    (tmp_path / "one.csv").write_text("id;name\n1;Ann\n2;Bob\n")
    r = run("commit", "o", "--from", str(tmp_path / "one.csv"))
    assert "has one column, 'id;name': its header holds no comma but ';'" in r.err


def test_an_unused_sql_parameter_is_named(repo: Repository) -> None:
    from dload_arrow.errors import SqlError

    with pytest.raises(SqlError, match=r"parameter\(s\) \['n'\] given, but the query names "
                                       r"no \$n"):
        repo.sql("select count(*) from datasets", n="people")
    assert repo.sql("select count(*) as c from datasets where name = $n",
                    n="people").column("c").to_pylist() == [1]


def test_export_writes_dates_as_text_and_names_the_null_columns(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Dates and times were written JSON-quoted ("2024-01-02") while text is bare, and a null
    column's missing file was not said."""
    import json

    from cli_run import runner

    (tmp_path / "p.csv").write_text("id,name,joined,at,age\n007,Ann,2024-01-02,"
                                    "2024-01-02 10:00:00,\n")
    run = runner(capsys, ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")])
    run("commit", "p", "--from", str(tmp_path / "p.csv"), "--key-column", "id")
    r = run("export", "p", "007", "--to", str(tmp_path / "out"))
    assert (tmp_path / "out" / "007.joined").read_text() == "2024-01-02"
    assert (tmp_path / "out" / "007.at").read_text() == "2024-01-02T10:00:00"
    assert (tmp_path / "out" / "007.name").read_text() == "Ann"
    assert "(no file for null column(s): age)" in r.out
    got = json.loads(run("export", "p", "007", "--to", str(tmp_path / "o2"), "--json").out)
    assert got["null_columns"] == ["age"]


def test_a_text_column_the_table_lacks_is_refused(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """QA review58c: a --text-column typo (or another case) did nothing, without a word."""
    from cli_run import runner

    (tmp_path / "a.csv").write_text("id,Zip,n\n1,01234,+3\n")
    (tmp_path / "b.csv").write_text("id,Zip\n1,x\n")
    run = runner(capsys, ["--root", str(tmp_path / "root"), "--cache-dir", str(tmp_path / "c")])
    r = run("commit", "a", "--from", str(tmp_path / "b.csv"), "--text-column", "zip", rc=1)
    assert "--text-column 'zip':" in r.err and "has no such column" in r.err
    r = run("commit", "a", "--from", str(tmp_path / "a.csv"), "--text-column", "Zip")
    assert "codes" not in r.err  # +3 is a signed number, not a code


def test_a_syntax_error_is_duckdbs_message(repo: Repository) -> None:
    """QA review58c: the unused-parameter check met a query that did not parse."""
    from dload_arrow.errors import SqlError

    with pytest.raises(SqlError, match="Parser Error"):
        repo.sql("selec 1", n=1)
