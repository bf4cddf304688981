"""Names as users type them (QA names56).

- a column stored in one Unicode form (NFC 'café') and typed in the other (NFD, as macOS file
  names are) was refused as missing, listing a column that prints the same: the refusal now
  says they differ in normalization; a commit of two such columns warns;
- SQL refused 'É' and 'é' as case twins, which DuckDB keeps apart (it folds ASCII only);
- "Did you mean" missed 'PHOTOS' for 'photos';
- a tag 'Latest' (or 'V1' beside 'v1') is one file with 'latest' on a case-insensitive
  filesystem: refused;
- a CSV header's empty name (a trailing comma) is refused naming the file and the column;
  export's refusal of a column holding '/' says what to do.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pyarrow as pa
import pytest

from dload_arrow import InvalidNameError, NotFoundError, PredicateError, Repository, SchemaError
from dload_arrow.ingest import open_table

NFC, NFD = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")


def test_a_column_typed_in_another_unicode_form_is_named_so(repo: Repository) -> None:
    repo.commit("menu", pa.table({NFC: [1, 2]}), progress=False)
    with pytest.raises(PredicateError, match=r"'cafe\\u0301' differs from 'caf\\xe9' only in "
                                             r"Unicode normalization \(that one is NFC\)"):
        repo.dataset("menu").where(f'"{NFD}" = 1')
    with pytest.raises(SchemaError, match="only in Unicode normalization"):
        repo.append("menu", pa.table({NFD: [3]}), progress=False)
    assert repo.dataset("menu").where(f'"{NFC}" = 1').num_rows == 1
    with pytest.warns(UserWarning, match=r"columns 'caf\\xe9' and 'cafe\\u0301' differ only in "
                                         "Unicode normalization"):
        repo.commit("twins", pa.table({NFC: [1], NFD: [2]}), progress=False)


def test_sql_keeps_non_ascii_case_twins_apart(repo: Repository) -> None:
    repo.commit("accents", pa.table({"É": [1], "é": [2]}), progress=False)
    got = repo.sql('select "é", "É" from samples(\'accents\')')
    assert got.column(0).to_pylist() == [2] and got.column(1).to_pylist() == [1]


def test_did_you_mean_ignores_case(repo: Repository) -> None:
    for n in [f"a{i:02d}" for i in range(12)] + ["photos"]:
        repo.commit(n, [("k", {"v": 1})], progress=False)
    with pytest.raises(NotFoundError, match=r"Did you mean 'photos'\? Known datasets: photos, "):
        repo.dataset("PHOTOS")


def test_tags_that_differ_only_in_case_are_refused(repo: Repository) -> None:
    v = repo.commit("d", [("a", {"x": 1})], progress=False).version
    repo.tag("d", v, "v1")
    for tag, twin in (("Latest", "latest"), ("LATEST", "latest"), ("V1", "v1")):
        with pytest.raises(InvalidNameError, match=f"tag {tag!r} differs from {twin!r} of 'd' "
                                                   "only in case"):
            repo.tag("d", v, tag)
    assert repo.tag("d", v, "v1") == v  # the same tag moves as before
    with pytest.raises(InvalidNameError, match=r"or delete .v1.: .dload tag d v1 --delete."):
        repo.tag("d", v, "V1")
    assert repo.tag("d", v, "v2") == v


def test_a_blank_csv_header_names_the_file_and_column(tmp_path: Path) -> None:
    csv = tmp_path / "export.csv"
    csv.write_text("id,a,b,\n4,5,6,\n")
    with pytest.raises(SchemaError, match=r"export.csv', line 1: column 4 of the header has no "
                                          r"name \(a trailing comma\?\)"):
        open_table(csv).read_all()
    csv.write_text("id, ,b\n4,5,6\n")
    with pytest.raises(SchemaError, match=r"column 2 of the header has no name;"):
        open_table(csv).read_all()
