"""Each row of TUTORIAL's table of what Arrow types become in torch batches and samples: which
become tensors (and of what dtype and shape) and which stay Python objects."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

from dload_arrow import Repository  # noqa: E402
from dload_arrow.torch import StatefulLoader, as_iterable_dataset  # noqa: E402

N = 4
COLUMNS = {
    "__key__": pa.array([f"k{i}" for i in range(N)]),
    "i8": pa.array([1, 2, 3, 4], pa.int8()),
    "u16": pa.array([1, 2, 3, 4], pa.uint16()),
    "f16": pa.array(np.arange(N, dtype=np.float16)),
    "f64": pa.array([0.5] * N),
    "flag": pa.array([True, False, True, False]),
    "maybe": pa.array([None, 2, 3, 4], pa.int64()),
    "vec": pa.array([[1.0, 2.0]] * N, pa.list_(pa.float32(), 2)),
    "holey": pa.array([[1.0, None]] * N, pa.list_(pa.float32(), 2)),
    "ragged": pa.array([[1], [1, 2], [], [3]], pa.list_(pa.int32())),
    "ragged_null": pa.array([[1, None], [2], [], [3]], pa.list_(pa.int64())),
    "text": pa.array(["a", "b", "c", "d"]),
    "big_text": pa.array(["a", "b", "c", "d"], pa.large_string()),
    "cat": pa.array(["a", "b", "a", "b"]).dictionary_encode(),
    "blob": pa.array([b"x"] * N),
    "fixed_blob": pa.array([b"ab"] * N, pa.binary(2)),
    "tags": pa.array([["a"], ["b"], [], ["c"]]),
    "rec": pa.array([{"a": 1, "b": "x"}] * N),
    "attrs": pa.array([[("k", 1)]] * N, pa.map_(pa.string(), pa.int64())),
    "ts": pa.array([dt.datetime(2020, 1, 1)] * N, pa.timestamp("us")),
    "day": pa.array([dt.date(2020, 1, 1)] * N, pa.date32()),
    "clock": pa.array([dt.time(1, 2)] * N, pa.time64("us")),
    "took": pa.array([dt.timedelta(seconds=1)] * N, pa.duration("s")),
    "price": pa.array([decimal.Decimal("1.50")] * N, pa.decimal128(5, 2)),
}


@pytest.fixture
def got(repo: Repository) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    repo.commit("t", pa.table(COLUMNS), key="__key__", progress=False)
    ds = repo.dataset("t")
    batch = next(iter(StatefulLoader(as_iterable_dataset(ds.pipeline().batch(N)))))
    samples = list(StatefulLoader(as_iterable_dataset(ds.pipeline())))
    assert [s["__key__"] for s in samples] == batch["__key__"] == [f"k{i}" for i in range(N)]
    return batch, samples


def _tensor(v: Any, dtype: torch.dtype, shape: tuple[int, ...]) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype == dtype and tuple(v.shape) == shape


def test_numbers_without_nulls_are_tensors_of_their_dtype(got: Any) -> None:
    batch, samples = got
    for name, dtype in (("i8", torch.int8), ("u16", torch.uint16), ("f16", torch.float16),
                        ("f64", torch.float64), ("flag", torch.bool)):
        assert _tensor(batch[name], dtype, (N,)), name
        assert _tensor(samples[1][name], dtype, ()), name


def test_numbers_with_a_null_stay_a_list_in_a_batch(got: Any) -> None:
    batch, samples = got
    assert batch["maybe"] == [None, 2, 3, 4]
    assert samples[0]["maybe"] is None and _tensor(samples[1]["maybe"], torch.int64, ())


def test_tensor_columns_and_numeric_lists(got: Any) -> None:
    batch, samples = got
    assert _tensor(batch["vec"], torch.float32, (N, 2))
    assert _tensor(samples[0]["vec"], torch.float32, (2,))
    assert batch["holey"] == [[1.0, None]] * N and samples[0]["holey"] == [1.0, None]
    assert batch["ragged"] == [[1], [1, 2], [], [3]]
    assert _tensor(samples[1]["ragged"], torch.int32, (2,))
    assert _tensor(samples[2]["ragged"], torch.int32, (0,))
    assert samples[0]["ragged_null"] == [1, None]


def test_everything_else_stays_python_objects(got: Any) -> None:
    batch, samples = got
    expected = {
        "text": "a", "big_text": "a", "cat": "a", "blob": b"x", "fixed_blob": b"ab",
        "tags": ["a"], "rec": {"a": 1, "b": "x"}, "attrs": [["k", 1]],
        "ts": dt.datetime(2020, 1, 1), "day": dt.date(2020, 1, 1), "clock": dt.time(1, 2),
        "took": dt.timedelta(seconds=1), "price": decimal.Decimal("1.50"),
    }
    for name, first in expected.items():
        assert isinstance(batch[name], list) and len(batch[name]) == N, name
        assert _same(batch[name][0], first) and _same(samples[0][name], first), name


def test_view_columns_stay_python_objects(repo: Repository) -> None:
    """views=True: string_view and binary_view columns come out as str and bytes, as the
    plain types do (values of 12 bytes or less are held inline in a view, longer ones not)."""
    text, blob = ["a", "b" * 13, None, "d" * 40], [b"x" * 30, b"y", b"z" * 12, None]
    repo.commit("v", pa.table({"__key__": [f"k{i}" for i in range(N)], "text": text,
                               "blob": pa.array(blob)}), key="__key__", progress=False)
    pipe = repo.dataset("v").pipeline(views=True)
    assert pipe.schema is not None and pipe.schema.field("text").type == pa.string_view()
    batch = next(iter(StatefulLoader(as_iterable_dataset(pipe.batch(N)))))
    samples = list(StatefulLoader(as_iterable_dataset(pipe)))
    assert batch["text"] == text and batch["blob"] == blob
    assert [s["text"] for s in samples] == text and [s["blob"] for s in samples] == blob


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same kind (a map's pairs may come as lists or tuples)."""
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(
            _same(list(x) if isinstance(x, tuple) else x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_the_tutorial_table_has_the_rows_pinned_here() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "TUTORIAL.md").read_text()
    for row in ("| integer, float (float16 too), bool; no nulls |",
                "| the same with a null in the batch |",
                "| fixed-size list of numbers (a tensor column) |",
                "| the same with a null value inside |", "| variable-length list of numbers |",
                "| string, large string, string view (`views=True`), dictionary of strings |",
                "| binary, fixed-size binary, binary view (`views=True`) |",
                "| list of strings (or of other non-numbers) |",
                "| struct |", "| map |", "| timestamp, date, time, duration |", "| decimal |"):
        assert row in text, row
