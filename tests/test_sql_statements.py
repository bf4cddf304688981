"""Every statement in sql/ runs against fixture manifests; repo.sql binds parameters."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from catalog_data import History, make_history

from dload_arrow import Repository
from dload_arrow.catalog import SqlError
from dload_arrow.catalog.samples_sql import find_samples_calls
from dload_arrow.catalog.statements import VIEW_ORDER, all_statements, sql_dir
from dload_arrow.errors import InvalidNameError, NotFoundError

SQL_FILES = sorted(Path(__file__).resolve().parents[1].joinpath("sql").rglob("*.sql"))


@pytest.fixture(scope="module")
def catalog_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repository, History]:
    d = tmp_path_factory.mktemp("sqlrepo")
    repo = Repository.open(d / "root", cache_dir=d / "cache", cache_budget="unlimited")
    return repo, make_history(repo)


def _returns(text: str) -> list[str]:
    """Column names from a header's ``returns:`` list (types and notes dropped)."""
    cols = []
    for part in re.sub(r"\([^)]*\)", "", text).split(","):
        word = part.strip().split(" ")[0].strip('"')
        if word:
            cols.append(word)
    return cols


def test_every_sql_file_is_loaded_as_a_statement() -> None:
    names = {st.name for st in all_statements().values()}
    assert names == {p.stem for p in SQL_FILES}
    assert sql_dir().is_dir()
    assert set(VIEW_ORDER) == {st.name for st in all_statements().values() if st.kind == "view"}


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.stem)
def test_statement_runs_against_fixture_manifests(
    path: Path, catalog_repo: tuple[Repository, History]
) -> None:
    repo, h = catalog_repo
    st = all_statements()[path.stem]
    assert st.returns, f"{path} has no 'returns:' header"
    values = {"name": "a", "version": h.a2}
    if st.kind == "view":
        assert not st.params
        table = repo.sql(f"SELECT * FROM {st.name}")
    else:
        table = repo.catalog.query(st.name, {p: values[p] for p in st.params})
    assert table.column_names == _returns(st.returns)
    assert table.num_rows > 0, f"{st.name} returned nothing on the fixture history"


def test_named_statement_rejects_missing_and_unexpected_params(
    catalog_repo: tuple[Repository, History],
) -> None:
    repo, _ = catalog_repo
    with pytest.raises(SqlError, match="missing"):
        repo.catalog.query("ancestors", {"name": "a"})
    with pytest.raises(NotFoundError, match="known"):
        repo.catalog.query("no_such_statement")


def test_parameters_are_bound_not_formatted(catalog_repo: tuple[Repository, History]) -> None:
    repo, _ = catalog_repo
    hostile = "a' OR 1=1 --"
    got = repo.sql("SELECT count(*) AS n FROM versions WHERE name = $name", name=hostile)
    assert got.column("n").to_pylist() == [0]
    got = repo.sql("SELECT count(*) AS n FROM versions WHERE name = $name", name="a")
    assert got.column("n").to_pylist() == [2]


def test_samples_reads_rows_of_latest_and_of_a_tag(
    catalog_repo: tuple[Repository, History],
) -> None:
    repo, h = catalog_repo
    latest = repo.sql("SELECT count(*) AS n FROM samples('a')").column("n")[0].as_py()
    tagged = repo.sql("SELECT count(*) AS n FROM samples('a', 'v1')").column("n")[0].as_py()
    by_id = repo.sql("SELECT count(*) AS n FROM samples('a', $v)".replace("$v", f"'{h.a1}'"))
    assert (latest, tagged, by_id.column("n")[0].as_py()) == (500, 400, 400)
    got = repo.sql(
        "SELECT label, count(*) AS n FROM samples('a') WHERE score > $s GROUP BY label "
        "ORDER BY label", s=0.5,
    )
    table = repo.dataset("a").to_arrow()
    want = table.filter(pa.compute.field("score") > 0.5).group_by("label").aggregate(
        [("label", "count")]).sort_by("label")
    assert got.column("n").to_pylist() == want.column("label_count").to_pylist()


def test_samples_joins_with_catalog_views(catalog_repo: tuple[Repository, History]) -> None:
    repo, _ = catalog_repo
    got = repo.sql(
        "SELECT d.name, count(*) AS n FROM samples('b') AS s, datasets AS d "
        "WHERE d.name = 'b' GROUP BY d.name"
    )
    assert got.to_pylist() == [{"name": "b", "n": 200}]


def test_samples_text_inside_strings_and_comments_is_left_alone() -> None:
    q = ("SELECT 'samples(''x'')' AS s -- samples('y')\n"
         "/* samples('z') */ FROM samples('real', 'v1') JOIN my_samples('q') ON true")
    calls = find_samples_calls(q)
    assert [(c.name, c.version) for c in calls] == [("real", "v1")]


def test_samples_with_a_non_literal_argument_is_refused() -> None:
    with pytest.raises(InvalidNameError, match="string literals"):
        find_samples_calls("SELECT * FROM samples(name)")


def test_sql_errors_name_the_views(catalog_repo: tuple[Repository, History]) -> None:
    repo, _ = catalog_repo
    with pytest.raises(SqlError, match=r"(?s)no_such_view.*Views: refs, log"):
        repo.sql("SELECT * FROM no_such_view")
    with pytest.raises(NotFoundError):
        repo.sql("SELECT * FROM samples('no-such-dataset')")
