"""Types QA round 10: numpy datetime64/timedelta64 samples of mixed units are SchemaErrors
naming the sample, in the first batch (type inference) and in a later one."""

from __future__ import annotations

import numpy as np
import pytest

import dload_arrow as dl


@pytest.mark.parametrize("first,later", [
    (np.datetime64("2024-01-01T00:00:00", "s"), np.datetime64("2024-01-01T00:00:00.5", "ms")),
    (np.datetime64("2024-01-01T00:00:00.123456789"), np.datetime64("2024-01-02")),
    (np.timedelta64(1, "s"), np.timedelta64(1500, "ms")),
])
@pytest.mark.parametrize("at", [1, 3000])  # in the first batch of 1,024 samples, or later
def test_mixed_numpy_time_units_are_a_schema_error_naming_the_sample(
        repo: dl.Repository, first: np.generic, later: np.generic, at: int) -> None:
    rows = [(f"k{i:05d}", {"when": later if i == at else first}) for i in range(at + 2)]
    with pytest.raises(dl.SchemaError, match=rf"sample 'k{at:05d}', column 'when'"):
        repo.commit("t", rows, progress=False)
    assert repo.datasets() == []


def test_integers_go_into_a_decimal_column_when_every_value_fits(repo: dl.Repository) -> None:
    import decimal

    import pyarrow as pa

    dec = pa.decimal128(5, 1)
    repo.commit("p", pa.table({"__key__": ["a"], "price": pa.array([decimal.Decimal("1.5")],
                                                                    dec)}), progress=False)
    repo.append("p", pa.table({"__key__": ["b", "c"], "price": pa.array([7, -12])}),
                progress=False)
    assert repo.dataset("p").to_arrow().column("price").to_pylist() == [
        decimal.Decimal("1.5"), decimal.Decimal("7.0"), decimal.Decimal("-12.0")]
    schema = pa.schema([("__key__", pa.string()), ("price", dec)])
    repo.commit("q", pa.table({"__key__": ["a"], "price": [7]}), schema=schema, progress=False)
    assert repo.dataset("q").schema.field("price").type == dec
    with pytest.raises(dl.SchemaError, match=r"column 'price' is int64.*does not fit in "
                                             r"precision 5"):
        repo.append("p", pa.table({"__key__": ["d"], "price": [123456]}), progress=False)


def test_head_and_info_show_a_fixed_shape_tensor_column_as_dtype_and_shape(
        repo: dl.Repository, local_root: str, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import pyarrow as pa
    from cli_run import runner

    tt = pa.fixed_shape_tensor(pa.uint8(), [4, 3])
    storage = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(24, dtype=np.uint8)), 12)
    repo.commit("ext", pa.table({"__key__": ["a", "b"],
                                 "img": pa.ExtensionArray.from_storage(tt, storage)}),
                progress=False)
    run = runner(capsys, ["--root", local_root])
    assert run("head", "ext").out.splitlines()[1].split() == ["a", "uint8[4,", "3]"]
    assert "img: uint8 shape [4, 3] (arrow.fixed_shape_tensor)" in run("info", "ext").out
    field = json.loads(run("info", "ext", "--json").out)["schema"][1]
    assert field == {"name": "img", "type": "uint8", "shape": [4, 3],
                     "extension": "arrow.fixed_shape_tensor"}


def test_to_pandas_keeps_null_apart_from_nan_inside_float_lists(repo: dl.Repository) -> None:
    import math

    import pyarrow as pa

    repo.commit("f", pa.table({"__key__": ["a", "b", "c"],
                               "l": [[1.0, None, math.nan], [2.0], None]}), progress=False)
    cells = repo.dataset("f").to_pandas()["l"].tolist()
    assert cells[0][0] == 1.0 and cells[0][1] is None and math.isnan(cells[0][2])
    assert cells[1].tolist() == [2.0] and cells[1].dtype == np.float64 and cells[2] is None
    repo.commit("g", pa.table({"__key__": ["a"], "l": [[1.0, None]]}), progress=False)
    only_null = repo.dataset("g").to_pandas()["l"][0]
    assert only_null.dtype == np.float64  # one of the two: NaN, as a float column reads


def test_lists_of_integers_go_into_a_list_of_decimals_column(repo: dl.Repository) -> None:
    import decimal

    import pyarrow as pa

    t = pa.list_(pa.decimal128(5, 1))
    repo.commit("p", pa.table({"__key__": ["a"], "v": pa.array([[decimal.Decimal("1.5")]], t)}),
                progress=False)
    repo.append("p", pa.table({"__key__": ["b"], "v": [[7, -3]]}), progress=False)
    assert repo.dataset("p").to_arrow().column("v").to_pylist()[1] == [
        decimal.Decimal("7.0"), decimal.Decimal("-3.0")]
    with pytest.raises(dl.SchemaError, match="does not fit in precision 5"):
        repo.append("p", pa.table({"__key__": ["c"], "v": [[123456]]}), progress=False)
