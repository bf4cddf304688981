"""Values are stored as given or refused with the sample and column named (QA pass 6).

Found by QA: text appended to a number column was parsed ("02134" became 2134), a datetime
lost its time of day in a date column, a float beyond float16/float32 became inf, str and
bytes in one column changed kind, a polars Enum's metadata made polars read an appended value
as null, and some inputs raised Arrow's or pandas' own errors without naming the column.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from dload_arrow import DloadError, NotFoundError, Repository, SchemaError


def test_a_value_appended_outside_a_polars_enum_reads_the_same_everywhere(
        repo: Repository) -> None:
    size = pl.Series(["lo"], dtype=pl.Enum(["lo", "hi"]))
    repo.commit("e", pl.DataFrame({"id": ["1"], "size": size}), key="id", progress=False)
    repo.append("e", pl.DataFrame({"id": ["2"], "size": ["mid"]}), key="id", progress=False)
    ds = repo.dataset("e")
    assert not any(k.startswith(b"_PL_") for k in ds.schema.field("size").metadata or {})
    assert ds.to_arrow().column("size").to_pylist() == ["lo", "mid"]
    assert ds.to_polars().collect()["size"].to_list() == ["lo", "mid"]
    assert ds.where("size = 'mid'").to_polars().collect().height == 1


@pytest.mark.parametrize(("column", "text", "stored"), [
    ("zip", "02134", 2139), ("flag", "false", True), ("when", "2024-01-01", dt.date(2023, 1, 1)),
])
def test_text_appended_to_a_number_column_is_refused_not_parsed(
        repo: Repository, column: str, text: str, stored: Any) -> None:
    repo.commit("d", pa.table({"id": ["a"], column: [stored]}), key="id", progress=False)
    with pytest.raises(SchemaError, match=rf"column '{column}' is string, and 'd' stores .*"
                                          r"not parsed.*Cast the column"):
        repo.append("d", pa.table({"id": ["b"], column: [text]}), key="id", progress=False)
    with pytest.raises(SchemaError, match=rf"column '{column}' is string.*not parsed"):
        repo.commit("t", pa.table({column: [text]}), progress=False,
                    schema=pa.schema([(column, pa.array([stored]).type)]))
    assert repo.dataset("d").num_rows == 1


def test_text_still_appends_to_a_string_or_categorical_column(repo: Repository) -> None:
    cat = pa.array(["x"]).dictionary_encode()
    repo.commit("d", pa.table({"id": ["a"], "s": ["x"], "c": cat}), key="id", progress=False)
    repo.append("d", pa.table({"id": ["b"], "s": ["02134"], "c": ["y"]}), key="id",
                progress=False)
    assert repo.dataset("d").get("b") == {"__key__": "b", "s": "02134", "c": "y"}


@pytest.mark.parametrize("rows", [
    [("e1", {"when": dt.date(2024, 1, 1)}), ("e2", {"when": dt.datetime(2024, 1, 1, 12, 30)})],
    [("e1", {"when": dt.date(2024, 1, 1)}), ("e2", {"when": pd.Timestamp("2024-01-01 00:01")})],
])
def test_a_datetime_with_a_time_of_day_is_refused_by_a_date_column(
        repo: Repository, rows: list[tuple[str, dict[str, Any]]]) -> None:
    with pytest.raises(SchemaError, match=r"sample 'e2', column 'when'.*time of day"):
        repo.commit("events", rows, progress=False)
    with pytest.raises(NotFoundError):
        repo.dataset("events")


def test_a_midnight_datetime_is_stored_as_its_date_and_append_checks_too(
        repo: Repository) -> None:
    repo.commit("ev", [("a", {"when": dt.date(2024, 1, 1)}),
                       ("b", {"when": dt.datetime(2024, 1, 2)})], progress=False)
    assert repo.dataset("ev").get("b")["when"] == dt.date(2024, 1, 2)
    with pytest.raises(SchemaError, match=r"sample 'c', column 'when'.*time of day"):
        repo.append("ev", [("c", {"when": dt.datetime(2024, 2, 2, 23, 59)})], progress=False)


def test_a_datetime_finer_than_a_timestamp_column_is_refused(repo: Repository) -> None:
    schema = pa.schema([("t", pa.timestamp("s"))])
    with pytest.raises(SchemaError, match=r"sample 'b', column 't'.*finer"):
        repo.commit("d", [("a", {"t": dt.datetime(2024, 1, 1)}),
                          ("b", {"t": dt.datetime(2024, 1, 1, 0, 0, 0, 500)})],
                    schema=schema, progress=False)


@pytest.mark.parametrize(("typ", "value"), [
    (pa.float16(), 70000.0), (pa.float32(), 1e40), (pa.float32(), np.float64(-1e39)),
    (pa.list_(pa.float32()), [1.0, 1e40]),
])
def test_a_float_beyond_its_column_is_refused_not_stored_as_inf(
        repo: Repository, typ: pa.DataType, value: Any) -> None:
    first = [0.5] if pa.types.is_list(typ) else 0.5
    with pytest.raises(SchemaError, match=r"sample 'b', column 'f'.*beyond the range.*inf"):
        repo.commit("h", [("a", {"f": first}), ("b", {"f": value})],
                    schema=pa.schema([("f", typ)]), progress=False)


def test_a_float_tensor_beyond_float32_is_refused(repo: Repository) -> None:
    repo.commit("t", [("a", {"x": np.zeros(2, np.float32)})], progress=False)
    with pytest.raises(SchemaError, match=r"sample 'b', column 'x'.*beyond the range"):
        repo.append("t", [("b", {"x": np.array([1.0, 1e40])})], progress=False)


def test_infinities_and_values_in_range_are_stored(repo: Repository) -> None:
    repo.commit("h", [("a", {"f": float("inf")}), ("b", {"f": 65504.0}), ("c", {"f": None})],
                schema=pa.schema([("f", pa.float16())]), progress=False)
    assert [s["f"] for s in repo.dataset("h").samples()] == [float("inf"), 65504.0, None]


def test_a_float64_table_beyond_a_float32_column_is_refused(repo: Repository) -> None:
    repo.commit("d", pa.table({"id": ["a"], "f": pa.array([1.5], pa.float32()),
                               "v": pa.array([[1.5]], pa.list_(pa.float32()))}),
                key="id", progress=False)
    ok = pa.table({"id": ["b"], "f": [2.5], "v": [[float("inf")]]})
    repo.append("d", ok, key="id", progress=False)
    with pytest.raises(SchemaError, match=r"column 'f' is double.*row 1, 1e\+40.*inf"):
        repo.append("d", pa.table({"id": ["c", "d"], "f": [1.0, 1e40], "v": [[1.0], [2.0]]}),
                    key="id", progress=False)
    with pytest.raises(SchemaError, match=r"column 'v' is list<item: double>.*row 1"):
        repo.append("d", pa.table({"id": ["c", "d"], "f": [1.0, 2.0], "v": [[1.0], [1e40]]}),
                    key="id", progress=False)
    assert repo.dataset("d").num_rows == 2


@pytest.mark.parametrize(("first", "other", "kind"), [
    ("a cat", b"\xff\xfe raw", "bytes"), (b"\xff\xfe raw", "a cat", "str"),
])
def test_a_column_mixing_str_and_bytes_is_refused_naming_the_other_kind(
        repo: Repository, first: Any, other: Any, kind: str) -> None:
    with pytest.raises(SchemaError,
                       match=rf"sample 'b', column 'caption'.* is {kind}, but earlier samples"):
        repo.commit("cap", [("a", {"caption": first}), ("b", {"caption": other})],
                    progress=False)


def test_bytes_appended_to_a_string_column_and_str_to_binary_are_refused(
        repo: Repository) -> None:
    repo.commit("d", [("a", {"s": "text", "b": b"raw"})], progress=False)
    with pytest.raises(SchemaError, match=r"sample 'z', column 's'.*is bytes"):
        repo.append("d", [("z", {"s": b"ok", "b": b"raw"})], progress=False)
    with pytest.raises(SchemaError, match=r"sample 'z', column 'b'.*is str"):
        repo.append("d", [("z", {"s": "ok", "b": "raw"})], progress=False)
    assert repo.dataset("d").num_rows == 1


@pytest.mark.parametrize(("make", "match"), [
    (lambda: pd.DataFrame([[1, 2]], columns=["a", "a"]), "duplicate column.*'a'"),
    (lambda: pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"]),
     "2 columns named 'a'"),
    (lambda: [("k", {"x": [1, "a"]})], r"sample 'k', column 'x'.*\[1, 'a'\]"),
    (lambda: [("a", {"t": dt.datetime(2020, 1, 1)}),
              ("b", {"t": np.datetime64("2020-01-01T00:00:00.000000001")})],
     r"sample 'b', column 't'.*datetime64\[us\]"),
    (lambda: [("k", {"d": {1: "x"}})], r"sample 'k', column 'd'.*dict keys"),
    (lambda: pl.DataFrame({"x": pl.Series([1], dtype=pl.Int128)}),
     r"column 'x' is a polars Int128.*cast"),
])
def test_inputs_arrow_cannot_take_are_dload_errors_naming_the_column(
        repo: Repository, make: Any, match: str) -> None:
    with pytest.raises(DloadError, match=match):
        repo.commit("d", make(), progress=False)


def test_a_nonzero_float_that_would_be_stored_as_zero_is_refused(repo: Repository) -> None:
    # float64 values into a float32 column: 1e-50 underflows to 0.0 (0.1 only rounds: kept)
    rows = [("a", {"v": np.array([0.5, 0.25], np.float32)}),
            ("b", {"v": np.array([1e-50, 0.1], np.float64)})]
    with pytest.raises(SchemaError, match=r"sample 'b', column 'v'.*stored as inf or 0"):
        repo.commit("p", rows, progress=False)
    repo.commit("p", [("a", {"v": np.array([0.5, 0.0], np.float32)}),
                      ("b", {"v": np.array([0.0, 0.1], np.float64)})], progress=False)
    assert repo.dataset("p")[1]["v"].tolist() == [0.0, np.float32(0.1)]
    repo.commit("t", pa.table({"id": ["a"], "f": pa.array([0.5], pa.float32())}), key="id",
                progress=False)
    with pytest.raises(SchemaError, match=r"column 'f'.*row 1, 1e-50.*inf or 0"):
        repo.append("t", pa.table({"id": ["b", "c"], "f": [0.25, 1e-50]}), key="id",
                    progress=False)


PARIS = "Europe/Paris"


@pytest.mark.parametrize("first_aware", [False, True])
def test_a_sample_with_or_without_a_time_zone_is_refused_by_the_other_kind_of_column(
        repo: Repository, first_aware: bool) -> None:
    from zoneinfo import ZoneInfo
    naive = dt.datetime(2024, 1, 1, 12)
    aware = naive.replace(tzinfo=ZoneInfo(PARIS))
    first, second = (aware, naive) if first_aware else (naive, aware)
    with pytest.raises(SchemaError, match=r"sample '2', column 't'.*time zone"):
        repo.commit("mixed", [("1", {"t": first}), ("2", {"t": second})],
                    progress=False)
    repo.commit("t", [("1", {"t": first})], progress=False)
    with pytest.raises(SchemaError, match="UTC"):
        repo.append("t", [("2", {"t": second})], progress=False)
    assert [s["t"] for s in repo.dataset("t").samples()] == [first]


@pytest.mark.parametrize("first_aware", [False, True])
def test_a_table_with_or_without_a_time_zone_is_refused_by_the_other_kind_of_column(
        repo: Repository, first_aware: bool) -> None:
    naive = pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("us"))
    aware = naive.cast(pa.timestamp("us", PARIS))
    first, second = (aware, naive) if first_aware else (naive, aware)
    repo.commit("t", pa.table({"id": ["1"], "t": first}), key="id", progress=False)
    with pytest.raises(SchemaError, match=r"column 't'.*time zone"):
        repo.append("t", pa.table({"id": ["2"], "t": second}), key="id", progress=False)
    # the same zone, or another zone (the same instant, shown in the column's zone) goes in
    utc = naive.cast(pa.timestamp("us", "UTC"))
    if first_aware:
        repo.append("t", pa.table({"id": ["2"], "t": utc}), key="id", progress=False)
        got = repo.dataset("t").to_arrow().column("t").to_pylist()
        assert got[1] == utc.to_pylist()[0]


@pytest.mark.parametrize(("stored", "appended"), [
    (pa.array([False]), pa.array([2, -1], pa.int64())),
    (pa.array([False]), pa.array([0.5])),
    (pa.array([dt.date(2024, 1, 1)]), pa.array([dt.datetime(2024, 1, 2, 12, 30)],
                                               pa.timestamp("s"))),
    (pa.array([1], pa.decimal128(5, 1)), pa.array([1.25])),
    (pa.array([0.0]), pa.array([10**30 + 1], pa.decimal128(38, 0))),
    (pa.array([{"a": True}]), pa.array([{"a": 5}])),
    (pa.array([[True]]), pa.array([[1, 0], [], None, [1, 2]], pa.list_(pa.int64()))),
])
def test_an_appended_column_whose_cast_would_change_a_value_is_refused(
        repo: Repository, stored: pa.Array, appended: pa.Array) -> None:
    repo.commit("d", pa.table({"id": ["a"], "c": stored}), key="id", progress=False)
    ids = [f"b{i}" for i in range(len(appended))]
    with pytest.raises(SchemaError, match=r"column 'c'.*would be stored as"):
        repo.append("d", pa.table({"id": ids, "c": appended}), key="id", progress=False)
    assert repo.dataset("d").to_arrow().column("c").to_pylist() == stored.to_pylist()


def test_casts_that_keep_every_value_still_append(repo: Repository) -> None:
    repo.commit("d", pa.table({"id": ["a"], "b": [True], "f": [0.5], "f32": pa.array(
        [1.0], pa.float32()), "when": [dt.date(2024, 1, 1)], "dec": pa.array(
        [1], pa.decimal128(5, 1)), "s": pa.array([{"a": 1.0}])}), key="id", progress=False)
    repo.append("d", pa.table({
        "id": ["b"], "b": pa.array([1], pa.int8()), "f": pa.array([3], pa.int32()),
        "f32": [0.1],  # float64 into float32 rounds by design (a float32 column)
        "when": pa.array([dt.datetime(2024, 1, 2)], pa.timestamp("s")),
        "dec": [1.5], "s": pa.array([{"a": 2}]), "nan": [float("nan")],
    }).drop_columns(["nan"]), key="id", progress=False)
    got = repo.dataset("d").to_arrow().to_pylist()[1]
    assert got["b"] is True and got["f"] == 3.0 and got["when"] == dt.date(2024, 1, 2)
    assert str(got["dec"]) == "1.5" and got["s"] == {"a": 2.0}


def test_commit_with_a_schema_refuses_a_table_value_it_would_change(repo: Repository) -> None:
    with pytest.raises(SchemaError, match="would be stored as True"):
        repo.commit("s", pa.table({"k": ["a"], "flag": [7]}), key="k",
                    schema=pa.schema([("flag", pa.bool_())]), progress=False)


def test_the_smallest_nanosecond_timestamp_commits_and_reads_back(repo: Repository) -> None:
    # -2**63 ns is pandas' NaT: the shard statistics once went through pandas and failed
    ticks = [-(2**63), 5, None, 2**63 - 1]
    t = pa.table({"k": ["a", "b", "c", "d"], "t": pa.array(ticks, pa.timestamp("ns"))})
    repo.commit("d", t, key="k", progress=False)
    got = repo.dataset("d").to_arrow().column("t").cast(pa.int64()).to_pylist()
    assert got == ticks
    m = repo.manifest("d").table
    assert m.column("min.t").cast(pa.int64()).to_pylist() == [-(2**63)]
    assert m.column("max.t").cast(pa.int64()).to_pylist() == [2**63 - 1]


def test_python_inputs_that_would_be_stored_wrong_are_refused(repo: Repository) -> None:
    """QA (write API): a polars Object column was stored as memory addresses, a set in hash
    order (a new version id in every process), a masked array without its mask, and with
    key= a schema= listing the key column stored that column as nulls."""
    obj = pl.DataFrame({"id": ["a"], "o": [{"x": 1}]}, schema={"id": pl.String, "o": pl.Object})
    with pytest.raises(SchemaError, match=r"column 'o' of the polars DataFrame holds Python "
                                          r"objects \(pl.Object\)"):
        repo.commit("o", obj, key="id", progress=False)
    for value in ({"alpha", "beta", "gamma"}, [{"b", "a"}], [[{"a", "b"}]],
                  [{"k": {"a", "b"}}]):
        with pytest.raises(SchemaError, match=r"sample 'a', column 't': a set \(or one inside"):
            repo.commit("s", [("a", {"t": value})], progress=False)
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(SchemaError, match=r"a masked array with masked values"):
        repo.commit("m", [("a", {"t": masked})], progress=False)
    with pytest.raises(SchemaError, match=r"a masked array with masked values"):
        repo.commit("m", [("a", {"t": np.zeros(3)}), ("b", {"t": masked})], progress=False)
    repo.commit("m", [("a", {"t": np.ma.masked_array([1.0, 2.0], mask=[0, 0])})],
                progress=False)
    assert repo.dataset("m").get("a")["t"].tolist() == [1.0, 2.0]
    keyed = pa.schema([("id", pa.string()), ("x", pa.float32())])
    for data in ([{"id": "a", "x": 1.0}], pa.table({"id": ["a"], "x": [1.0]})):
        with pytest.raises(SchemaError, match=r"schema= lists 'id', the key column \(key=\)"):
            repo.commit("b", data, key="id", progress=False, schema=keyed)
    with pytest.raises(NotFoundError):
        repo.dataset("o")



def test_a_column_the_first_sample_lacks_is_refused_saying_why_and_the_fix(
        repo: Repository) -> None:
    """QA: [("a", {"x": 1}), ("b", {"x": 2, "y": "q"})] was refused saying "the schema lacks"
    though no schema was given. Columns come from the first sample (a misspelt one is
    caught), and the message now says so and how to declare optional columns."""
    rows = [("a", {"x": 1}), ("b", {"x": 2, "y": "q"})]
    with pytest.raises(SchemaError, match=r"sample 'b' has columns \['y'\] .* come from the "
                                          r"first sample.* pass schema= with every column"):
        repo.commit("c", rows, progress=False)
    repo.commit("c", rows, progress=False,
                schema=pa.schema([("x", pa.int64()), ("y", pa.string())]))
    assert repo.dataset("c").to_arrow().to_pylist() == [
        {"__key__": "a", "x": 1, "y": None}, {"__key__": "b", "x": 2, "y": "q"}]


@pytest.mark.parametrize("frame", ["arrow", "polars", "pandas"])
def test_an_empty_key_in_a_table_is_refused_as_in_samples(repo: Repository, frame: str) -> None:
    """QA: a table committed an empty key that pairs and dicts refuse, and the dataset then
    could not be committed again from its own samples() (or derived)."""
    table = pa.table({"k": ["a", "", "c"], "x": [1, 2, 3]})
    data: Any = {"arrow": table, "polars": pl.from_arrow(table), "pandas": table.to_pandas()}
    with pytest.raises(SchemaError, match=r"key column 'k', row 1: an empty key"):
        repo.commit("e", data[frame], key="k", progress=False)
    with pytest.raises(NotFoundError):
        repo.dataset("e")


def test_a_null_in_a_not_null_field_is_a_schema_error_naming_it(repo: Repository) -> None:
    """QA: a None for a field declared nullable=False (a Parquet file's required column,
    schema=) ended in pyarrow's raw ArrowInvalid from the Parquet writer."""
    required = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    repo.commit("n", pa.table({"x": [1, 2]}, schema=required), progress=False)
    with pytest.raises(SchemaError, match=r"Column 'x' is declared non-nullable but contains "
                                          r"nulls \(its field says nullable=False"):
        repo.append("n", [{"x": None}], progress=False)
    with pytest.raises(SchemaError, match=r"give every sample a value there"):
        repo.commit("m", [("a", {"x": None})], schema=required, progress=False)
    assert repo.dataset("n").num_rows == 2


def test_odd_schema_arguments_are_refused_or_read_as_pairs_read_them(repo: Repository) -> None:
    """QA: `__key__` listed second raised a raw KeyError, as int64 a raw ArrowInvalid, as a
    nullable string it changed the version id; a column named twice blamed the samples; a
    table in another column order than schema= (or lacking one of its columns) got Arrow's
    "field names are not matching", where pairs are accepted."""
    one = [("a", {"x": 1})]
    for bad, match in [
        (pa.schema([("x", pa.int64()), ("__key__", pa.string())]), "at position 1"),
        (pa.schema([("__key__", pa.int64()), ("x", pa.int64())]), "as int64 at position 0"),
        (pa.schema([("x", pa.int64()), ("x", pa.int64())]), "names column 'x' more than once"),
    ]:
        with pytest.raises(SchemaError, match=match):
            repo.commit("a", one, schema=bad, progress=False)
    plain = repo.commit("a", one, schema=pa.schema([("x", pa.int64())]), progress=False)
    keyed = repo.commit("a", one, progress=False,  # a nullable __key__: the same rows, id
                        schema=pa.schema([("__key__", pa.string()), ("x", pa.int64())]))
    assert keyed.version == plain.version
    assert repo.dataset("a").schema.field("__key__").nullable is False
    wide = pa.schema([("x", pa.int64()), ("y", pa.string())])
    repo.commit("t", pa.table({"y": ["q"], "x": [1]}), schema=wide, progress=False)
    repo.commit("u", pa.table({"x": [1]}), schema=wide, progress=False)
    assert repo.dataset("t").to_arrow().to_pylist() == [{"__key__": "000000000000", "x": 1,
                                                         "y": "q"}]
    assert repo.dataset("u").to_arrow().column("y").to_pylist() == [None]
    with pytest.raises(SchemaError, match=r"column 'z' is not in schema="):
        repo.commit("v", pa.table({"x": [1], "z": [2]}), schema=pa.schema([("x", pa.int64())]),
                    progress=False)
