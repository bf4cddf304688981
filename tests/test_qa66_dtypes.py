"""QA dtypes66, every Arrow and pandas type: times finer than their column's unit given as
samples (a 1.5 s timedelta into duration[s], a half second into time32[s], 999 ns into the
duration[us] pyarrow infers for a pandas Timedelta, at any depth) were truncated silently
where a table is refused."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dload_arrow as dl

_S = dt.timedelta(seconds=1.5)


@pytest.fixture
def repo(tmp_path: Path) -> dl.Repository:
    return dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))


@pytest.mark.parametrize(("typ", "value"), [
    (pa.duration("s"), _S),
    (pa.duration("ms"), dt.timedelta(microseconds=1500)),
    (pa.duration("us"), pd.Timedelta(1001, "ns")),
    (pa.time32("s"), dt.time(1, 2, 3, 500000)),
    (pa.time32("ms"), dt.time(1, 2, 3, 1)),
    (pa.list_(pa.duration("s")), [dt.timedelta(seconds=1), _S]),
    (pa.list_(pa.time32("s")), [dt.time(1, 2, 3, 500000)]),
    (pa.struct([("d", pa.duration("s"))]), {"d": _S}),
    (pa.list_(pa.timestamp("s")), [dt.datetime(2024, 1, 1, 0, 0, 1, 500000)]),
    (pa.map_(pa.string(), pa.duration("s")), [("a", _S)]),
])
def test_a_time_finer_than_its_unit_is_refused_at_any_depth(
        repo: dl.Repository, typ: pa.DataType, value: Any) -> None:
    schema = pa.schema([("v", typ)])
    with pytest.raises(dl.SchemaError, match=r"sample 'b', column 'v': value .* finer than "
                       r"(the column's type|its field's unit) .* would (truncate|cut) it"):
        repo.commit("t", [("a", {"v": None}), ("b", {"v": value})], schema=schema)
    assert repo.datasets() == []


def test_whole_values_of_the_unit_are_taken_and_kept(repo: dl.Repository) -> None:
    rows = {"d": dt.timedelta(seconds=2), "t": dt.time(1, 2, 3),
            "l": [dt.timedelta(seconds=-3)], "old": dt.datetime(1500, 1, 1, 0, 0, 1),
            "lo": [dt.datetime(1500, 1, 1, 0, 0, 1)]}
    schema = pa.schema([("d", pa.duration("s")), ("t", pa.time32("s")),
                        ("l", pa.list_(pa.duration("s"))), ("old", pa.timestamp("s")),
                        ("lo", pa.list_(pa.timestamp("s")))])
    repo.commit("w", [("a", rows)], schema=schema)
    got = next(iter(repo.dataset("w").samples()))
    assert {k: got[k] for k in rows} == rows


def test_inferred_and_appended_durations_are_never_truncated(repo: dl.Repository) -> None:
    with pytest.raises(dl.SchemaError, match=r"sample 'k1', column 'gap'.*finer"):
        repo.commit("b", [("k0", {"gap": np.timedelta64(5, "s")}), ("k1", {"gap": _S})])
    repo.commit("c", [("k", {"gap": pd.Timedelta(999, "ns")})])
    ds = repo.dataset("c")
    assert ds.schema.field("gap").type == pa.duration("ns")
    assert ds.to_arrow().column("gap").cast(pa.int64()).to_pylist() == [999]
    repo.commit("a", [("k", {"gap": dt.timedelta(seconds=1)})],
                schema=pa.schema([("gap", pa.duration("s"))]))
    with pytest.raises(dl.SchemaError, match=r"sample 'k2', column 'gap'.*finer"):
        repo.append("a", [("k2", {"gap": dt.timedelta(milliseconds=2500)})])
    assert repo.dataset("a").num_rows == 1
    repo.append("a", [("k3", {"gap": dt.timedelta(seconds=4)})])
    assert [s["gap"].total_seconds() for s in repo.dataset("a").samples()] == [1.0, 4.0]


def test_a_dictionary_holding_a_null_commits_as_its_values(repo: dl.Repository) -> None:
    """F3: a null held in the dictionary itself (null_encoding="encode") failed in the
    Parquet writer with Arrow's words."""
    held = pa.array(["a", None, "b", "a"]).dictionary_encode(null_encoding="encode")
    plain = pa.array(["a", None, "b", "a"]).dictionary_encode()
    repo.commit("d", pa.table({"split": held}))
    repo.commit("e", pa.table({"split": plain}))
    assert repo.dataset("d").to_arrow().column("split").to_pylist() == ["a", None, "b", "a"]
    shards = [repo.dataset(n).manifest.table.column("digest").to_pylist() for n in "de"]
    assert shards[0] == shards[1]


def test_a_time_of_day_with_a_zone_is_refused(repo: dl.Repository) -> None:
    """F4: the zone of a time of day was dropped silently (where() refuses such literals)."""
    plus2 = dt.timezone(dt.timedelta(hours=2))
    with pytest.raises(dl.SchemaError, match=r"sample 'b', column 'opens': .* has a zone.*"
                       r"v\.replace\(tzinfo=None\)"):
        repo.commit("t", [("a", {"opens": dt.time(12)}),
                          ("b", {"opens": dt.time(12, tzinfo=plus2)})])
    repo.commit("t", [("a", {"opens": dt.time(12)})])
    assert repo.dataset("t").to_arrow().column("opens").to_pylist() == [dt.time(12)]


def test_an_int_a_float16_column_cannot_hold_is_refused(repo: dl.Repository) -> None:
    """F5: 2049 into float16 was stored as 2048.0 from samples (a table is refused)."""
    schema = pa.schema([("h", pa.float16())])
    with pytest.raises(dl.SchemaError, match="sample 'b', column 'h': value 2049 is an int "
                       "that float16 cannot hold exactly"):
        repo.commit("h", [("a", {"h": 2048}), ("b", {"h": 2049})], schema=schema)
    repo.commit("h", [("a", {"h": 2048}), ("b", {"h": -7}), ("c", {"h": 0.1})], schema=schema)
    with pytest.raises(dl.SchemaError, match="value 4097 is an int"):
        repo.append("h", [("d", {"h": 4097})])
    with pytest.raises(dl.SchemaError, match=r"value \[1, 65519\] is an int"):
        repo.commit("l", [("a", {"v": [1, 65519]})],
                    schema=pa.schema([("v", pa.list_(pa.float16()))]))
    assert [s["h"] for s in repo.dataset("h").samples()][:2] == [2048.0, -7.0]


def test_pandas_missing_value_in_a_sample_is_a_null(repo: dl.Repository) -> None:
    """F6: pd.NA (a row of an Int64 column) was refused with "store a wider type"."""
    rows = [("a", {"n": 1}), ("b", {"n": pd.NA}), ("c", {"n": None})]
    repo.commit("n", rows)
    repo.commit("m", rows, schema=pa.schema([("n", pa.int64())]))
    repo.commit("o", [("a", {"n": pd.NA})])
    for name in "nm":
        assert repo.dataset(name).to_arrow().column("n").to_pylist() == [1, None, None]
    assert repo.dataset("o").to_arrow().column("n").to_pylist() == [None]


def test_a_refused_append_names_the_row_and_value_across_batches(repo: dl.Repository) -> None:
    """F10: a decimal refused for its scale named no value ("Rescaling Decimal value would
    cause data loss"), and a float beyond float32 was named by its row in its batch (500 for
    the input's row 2500)."""
    import decimal

    d = decimal.Decimal
    repo.commit("p", pa.table({"id": ["a"], "price": pa.array([d("1.23")], pa.decimal128(5, 2)),
                               "f": pa.array([1.0], pa.float32())}), key="id")
    prices = [d("2.5000")] * 2500 + [d("2.5001")] + [d("1")] * 499
    t = pa.table({"id": [f"k{i}" for i in range(3000)],
                  "price": pa.array(prices, pa.decimal128(10, 4)), "f": [1.5] * 3000})
    batched = pa.Table.from_batches(t.to_batches(max_chunksize=1000))
    with pytest.raises(dl.SchemaError, match=r"column 'price' .* the value at row 2500, "
                       r"Decimal\('2.5001'\), does not fit"):
        repo.append("p", batched, key="id")
    floats = t.set_column(2, "f", pa.array([1.5] * 1700 + [1e300] * 1300))
    floats = floats.set_column(1, "price", pa.array([d("1")] * 3000, pa.decimal128(5, 2)))
    with pytest.raises(dl.SchemaError, match=r"the value at row 1700, 1e\+300, is beyond"):
        repo.append("p", pa.Table.from_batches(floats.to_batches(max_chunksize=1000)), key="id")
    assert repo.dataset("p").num_rows == 1
