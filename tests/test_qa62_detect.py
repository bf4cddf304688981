"""QA detect62: detection data (a list of box structs per image). A where() on a field inside
the list points at SQL and a filter that work; an append whose structs gain a field is told
how, without an append(schema=) that does not exist; zero boxes as a (0, 4) array are told
to use a nested-list schema (not None)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.errors import PredicateError, SchemaError


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")


def _coco(repo: dl.Repository) -> dl.Dataset:
    repo.commit("coco", [
        ("a", {"annotations": [{"bbox": [1.0, 2.0, 3.0, 4.0], "category_id": 18}]}),
        ("b", {"annotations": [{"bbox": [0.5, 0.5, 1.0, 1.0], "category_id": 2}]}),
        ("c", {"annotations": []})], progress=False)
    return repo.dataset("coco")


def test_where_on_a_field_in_a_list_points_at_what_works(repo: dl.Repository) -> None:
    ds = _coco(repo)
    with pytest.raises(PredicateError) as e:
        ds.where("annotations.category_id = 18")
    said = str(e.value)
    assert "not a field of the list 'annotations'" in said
    sql = "len(list_filter(annotations, lambda x: x.category_id ...)) > 0"
    assert sql in said and "any(a['category_id'] ... for a in r['annotations'])" in said
    got = repo.sql("SELECT __key__ FROM samples('coco') WHERE " + sql.replace(" ...", " = 18"))
    assert got["__key__"].to_pylist() == ["a"]
    picked = ds.pipeline().filter(lambda r: any(a["category_id"] == 18
                                                for a in r["annotations"]))
    assert [r["__key__"] for r in picked] == ["a"]
    repo.commit("flat", [("a", {"box": {"category_id": 3}})], progress=False)
    with pytest.raises(PredicateError, match=r"WHERE box\.category_id \.\.\."):
        repo.dataset("flat").where("box.category_id = 3")  # a struct: its own advice


def test_an_appended_struct_with_a_new_field_is_told_what_works(repo: dl.Repository) -> None:
    _coco(repo)
    new = [("d", {"annotations": [{"bbox": [5.0, 6.0, 7.0, 8.0], "category_id": 2,
                                   "score": 0.9}]})]
    with pytest.raises(SchemaError, match=r"field 'annotations\[\]\.score' is not in .* an "
                                          r"append keeps the stored type: commit the old rows "
                                          r"and the new ones with it"):
        repo.append("coco", new, progress=False)


def test_zero_boxes_as_an_empty_array_are_told_the_nested_list_schema(
        repo: dl.Repository) -> None:
    rows = [("img0", {"boxes": np.zeros((0, 4))}), ("img1", {"boxes": np.ones((2, 4))})]
    with pytest.raises(SchemaError, match=r"schema= with 'boxes' as pa\.list_\(pa\.list_\("
                                          r"pa\.float64\(\), 4\)\) \(then it is \[\]\)"):
        repo.commit("det", rows, progress=False)
    repo.commit("det", rows, schema=pa.schema([("boxes", pa.list_(pa.list_(pa.float64(), 4)))]),
                progress=False)  # as advised
    assert [r["boxes"] for r in repo.dataset("det").head(2).to_pylist()] == [
        [], [[1.0] * 4] * 2]
