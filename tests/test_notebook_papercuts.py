"""A notebook user's view of a dataset: exact pandas values, cheap reprs, refs of typos."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from dload_arrow import ConfigError, InvalidNameError, NotFoundError, Repository
from dload_arrow.catalog.lineage import SHOWN_SHARED


def test_to_pandas_keeps_integers_with_nulls_exact(repo: Repository) -> None:
    big = 2**53 + 1  # not a float64: Arrow's default conversion gives 9007199254740992.0
    repo.commit("ids", pa.table({
        "id": pa.array([big, None, 3], pa.int64()),
        "h": pa.array([2**64 - 1, None, 1], pa.uint64()),
        "small": pa.array([1, None, -3], pa.int8()),
        "ok": pa.array([True, None, False]),
        "n": pa.array([1, 2, 3], pa.int64()),  # no nulls: plain numpy dtypes, as before
        "b": pa.array([True, False, True]),
    }), progress=False)
    out = repo.dataset("ids").to_pandas()
    assert out["id"].dtype == pd.Int64Dtype() and out["id"].tolist()[0] == big
    assert out["id"].isna().tolist() == [False, True, False]
    assert out["h"].dtype == pd.UInt64Dtype() and out["h"].tolist()[0] == 2**64 - 1
    assert out["small"].dtype == pd.Int8Dtype()
    assert out["ok"].dtype == pd.BooleanDtype() and out["ok"].tolist()[2] is False
    assert str(out["n"].dtype) == "int64" and str(out["b"].dtype) == "bool"
    assert list(out.columns) == ["__key__", "id", "h", "small", "ok", "n", "b"]


def test_a_views_repr_reads_nothing_and_shows_its_filter(repo: Repository) -> None:
    repo.commit("d", [(f"k{i:03d}", {"label": i % 10}) for i in range(100)], progress=False)
    view = repo.dataset("d").where("label = 3").where("label < 5")
    text = repr(view)
    assert "where='(label = 3) AND (label < 5)'" in text and "rows=? of 100" in text
    assert "_random_access" not in view.__dict__  # nothing was read to show it
    assert len(view) == 10
    assert "rows=10," in repr(view)
    assert "where" not in repr(repo.dataset("d")) and "rows=100," in repr(repo.dataset("d"))


@pytest.mark.parametrize("tag", ["904", "a", "0", "beef"])
def test_a_tag_of_hex_digits_only_is_refused_at_any_length(repo: Repository, tag: str) -> None:
    v = repo.commit("d", [("k", {"x": 1})], progress=False)
    with pytest.raises(InvalidNameError, match="version id prefix"):
        repo.tag("d", v.version, tag)
    assert repo.tag("d", v.version, "v904") == v.version


def test_refs_and_log_of_a_mistyped_name_say_so(repo: Repository) -> None:
    repo.commit("images", [("k", {"x": 1})], progress=False)
    for call in (repo.refs, repo.log):
        with pytest.raises(NotFoundError, match="images"):  # "did you mean 'images'?"
            call("imagse")
    assert repo.refs("images")["latest"]
    assert [e.ref for e in repo.log("images")] == ["latest"]
    repo.rm("images")
    assert repo.log("images")  # a removed dataset's log stays readable


def test_lineage_text_shows_a_bounded_number_of_rows(repo: Repository) -> None:
    appends = SHOWN_SHARED + 7
    repo.commit("m", [("k000", {"x": 0})], progress=False)
    for i in range(1, appends + 1):
        repo.append("m", [(f"k{i:03d}", {"x": i})], progress=False)
    lin = repo.lineage("m")
    text = str(lin)
    assert text.count(" <- ") == SHOWN_SHARED
    assert f"... {appends - SHOWN_SHARED} more (all of them" in text
    assert lin.moves.num_rows == appends + 1
    assert f"... {appends + 1 - SHOWN_SHARED} earlier moves" in text
    assert len(text.splitlines()) < 4 * SHOWN_SHARED + 10
    assert len(repr(lin)) < 200 and f"{appends} ancestors" in repr(lin)
    assert len(lin.to_dict()["ancestors"]) == appends


def test_find_version_names_the_dataset_of_an_id_prefix(repo: Repository) -> None:
    a = repo.commit("a", [("k", {"x": 1})], progress=False)
    b = repo.commit("b", [("k", {"x": 2})], progress=False)
    assert repo.find_version(a.version[:8]) == ("a", a.version)
    assert repo.find_version(b.version.upper()) == ("b", b.version)
    with pytest.raises(NotFoundError, match="no version"):
        repo.find_version("0" * 12 if not a.version.startswith("0") else "f" * 12)
    with pytest.raises(InvalidNameError, match="NAME@VERSION"):
        repo.find_version("v1")


def test_a_version_that_is_not_text_is_refused_clearly(repo: Repository) -> None:
    repo.commit("ok", [("k", {"x": 1})], progress=False)
    with pytest.raises(ConfigError, match=r"version must be a str.*int 1"):
        repo.dataset("ok", 1)  # type: ignore[arg-type]


def test_an_unsigned_64_bit_value_points_to_a_uint64_schema(repo: Repository) -> None:
    from dload_arrow import SchemaError

    with pytest.raises(SchemaError, match=r"schema=pa\.schema\(\[\('hash', pa\.uint64\(\)\)\]\)"):
        repo.commit("h", [("k", {"hash": 2**64 - 1})], progress=False)
    with pytest.raises(SchemaError, match=r"sample 'b' has -1.*no integer column holds both"):
        repo.commit("h", [("a", {"hash": 2**64 - 1}), ("b", {"hash": -1})], progress=False)
    v = repo.commit("h", [("k", {"hash": 2**64 - 1})],
                    schema=pa.schema([("hash", pa.uint64())]), progress=False)
    assert repo.dataset("h", v.version)[0]["hash"] == 2**64 - 1
