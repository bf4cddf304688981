"""QA robotics60: episodes of frames, joint vectors and images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow.errors import PredicateError, SchemaError


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")


def test_pad_collate_keeps_the_type_of_rows_of_frames(repo: dl.Repository) -> None:
    """list<list<float32>> frames came out float64, list<list<uint8>> images int64."""
    sch = pa.schema([("joints", pa.list_(pa.list_(pa.float32()))),
                     ("image", pa.list_(pa.list_(pa.uint8())))])
    rows = [(f"ep{e}", {"joints": np.full((t, 7), e, np.float32),
                        "image": np.full((t, 12), 200, np.uint8)})
            for e, t in enumerate([2, 5, 3])]
    repo.commit("eps", rows, schema=sch, progress=False)
    b = next(iter(repo.dataset("eps").pipeline().batch(3, collate=dl.pad_collate())))
    assert b["joints"].dtype == np.float32 and b["joints"].shape == (3, 5, 7)
    assert b["image"].dtype == np.uint8 and b["image"][1].max() == 200
    assert b["joints"][2, :3].tolist() == [[2.0] * 7] * 3 and not b["joints"][2, 3:].any()


def test_a_ragged_column_of_rows_of_rows_is_left_alone_by_default(repo: dl.Repository
                                                                  ) -> None:
    sch = pa.schema([("docs", pa.list_(pa.list_(pa.int32())))])
    repo.commit("d", [("a", {"docs": [[1, 2], [3]]}), ("b", {"docs": [[4]]})], schema=sch,
                progress=False)
    b = next(iter(repo.dataset("d").pipeline().batch(2, collate=dl.pad_collate())))
    assert b["docs"] == [[[1, 2], [3]], [[4]]]  # rows of rows of two lengths: not one array


def test_an_append_of_another_shape_names_the_stored_column_and_its_nested_type(
        repo: dl.Repository) -> None:
    repo.commit("steps", [("ep0/0", {"image": np.zeros((32, 32, 3), np.uint8)})],
                progress=False)
    with pytest.raises(SchemaError, match=r"the stored column's on an append.*an append keeps "
                       r"the stored type.*pa\.list_\(pa\.list_\(pa\.list_\(pa\.uint8\(\)\)\)\)"):
        repo.append("steps", [("ep1/0", {"image": np.zeros((64, 64, 3), np.uint8)})],
                    progress=False)
    rows = [("a", {"image": np.zeros((2, 2, 3), np.float32), "n": 1}),
            ("b", {"image": np.zeros((4, 4, 3), np.float32), "n": 2})]
    with pytest.raises(SchemaError, match=r"'image' field is pa\.list_\(pa\.list_\(pa\.list_\("
                       r"pa\.float32\(\)\)\)\) \(a schema names every column"):
        repo.commit("var", rows, progress=False)
    sch = pa.schema([("image", pa.list_(pa.list_(pa.list_(pa.float32())))), ("n", pa.int64())])
    assert repo.commit("var", rows, schema=sch, progress=False).num_rows == 2  # as it says


def test_a_dict_of_image_arrays_is_pointed_at_polars(repo: dl.Repository) -> None:
    import polars as pl

    d = {"image": np.zeros((5, 4, 4, 3), np.uint8), "joints": np.zeros((5, 7), np.float32)}
    with pytest.raises(SchemaError, match=r"pass pl\.DataFrame\(d\)"):
        repo.commit("np", d, progress=False)  # type: ignore[arg-type]
    repo.commit("np", pl.DataFrame(d), progress=False)  # the way the message gives
    assert repo.dataset("np")[0]["image"].shape == (4, 4, 3)
    with pytest.raises(SchemaError, match=r"pass pa\.table\(d\) or a DataFrame"):
        repo.commit("np", {"x": np.zeros(3)}, progress=False)  # type: ignore[arg-type]


def test_a_double_quoted_value_in_where_says_strings_take_single_quotes(
        repo: dl.Repository) -> None:
    repo.commit("s", [(f"s{i}", {"robot_id": f"r{i % 2}"}) for i in range(4)], progress=False)
    with pytest.raises(PredicateError, match=r"if 'r1' is a value, write it in single "
                       r"quotes, 'r1'"):
        repo.dataset("s").where('robot_id = "r1"')
    assert repo.dataset("s").where("robot_id = 'r1'").num_rows == 2
    with pytest.raises(PredicateError) as e:  # a misspelt bare column: no value hint
        repo.dataset("s").where("robotid = 3")
    assert "single quotes" not in str(e.value)


def test_default_padding_of_rows_of_frames_with_null_frames_and_ragged_rows(
        repo: dl.Repository) -> None:
    """QA review60c: a null frame left a batch as lists; a ragged batch stopped the epoch."""
    sch = pa.schema([("f", pa.list_(pa.list_(pa.float32()))),
                     ("docs", pa.list_(pa.list_(pa.int32())))])
    rows = [("a", {"f": [[1.0, 2.0], None], "docs": [[1, 2]]}),
            ("b", {"f": [[3.0, 4.0]], "docs": [[3]]}),
            ("c", {"f": [[5.0, 6.0]], "docs": [[1, 2], [3]]}),
            ("d", {"f": [[7.0, 8.0]], "docs": [[4], [5, 6, 7]]})]
    repo.commit("eps", rows, schema=sch, progress=False)
    batches = list(repo.dataset("eps").pipeline().batch(2, collate=dl.pad_collate(mask=True)))
    assert len(batches) == 2
    first = batches[0]
    assert first["f"].dtype == np.float32 and first["f"].shape == (2, 2, 2)
    assert first["f_mask"].tolist() == [[True, False], [True, False]]
    assert batches[1]["docs"] == [[[1, 2], [3]], [[4], [5, 6, 7]]]  # left as lists
    named = list(repo.dataset("eps").pipeline().batch(2, collate=dl.pad_collate(
        columns=["docs"])))  # named: lists with their keys too (QA review64i)
    assert named[1]["docs"] == batches[1]["docs"] and named[1]["docs_length"].tolist() == [2, 2]
    assert named[0]["docs"] == [[[1, 2]], [[3]]] and sorted(named[0]) == sorted(named[1])


def test_review60d_numpy_frames_and_a_row_of_null_frames(repo: dl.Repository) -> None:
    """A cell of numpy frames crashed the collate (`None in` compared their items); a row
    whose frames were all null left the whole batch as lists."""
    out = dl.pad_collate()([{"f": [np.zeros(3), np.ones(3)], "s": [np.array(["a", "b"])]},
                            {"f": [np.ones(3)], "s": [np.array(["c"])]}])
    assert out["f"].shape == (2, 2, 3) and out["f_length"].tolist() == [2, 1]
    sch = pa.schema([("f", pa.list_(pa.list_(pa.float32())))])
    repo.commit("eps", [("a", {"f": [[1.0, 2.0]]}), ("b", {"f": [None, None]})], schema=sch,
                progress=False)
    b = next(iter(repo.dataset("eps").pipeline().batch(2, collate=dl.pad_collate(mask=True))))
    assert b["f"].dtype == np.float32 and b["f"].shape == (2, 2, 2)
    assert b["f_mask"].tolist() == [[True, False], [False, False]]
