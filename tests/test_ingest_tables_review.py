"""Table ingestion edges found by review: Hive partition folders keep their values, empty part
files are skipped, and CSV text that pyarrow would misread (an unclosed quote, a file that is
not UTF-8) is refused with the file, line and fix."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import RunFn, runner

from dload_arrow import NotFoundError, Repository, SchemaError
from dload_arrow.ingest import open_table


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_hive_partition_folders_become_columns(repo: Repository, tmp_path: Path) -> None:
    table = pa.table({"year": [2023, 2024, 2024, None], "city": ["a b", "x/y", "q", "q"],
                      "x": [1, 2, 3, 4], "k": ["a", "b", "c", "d"]})
    pq.write_to_dataset(table, str(tmp_path / "t"), partition_cols=["year", "city"])
    repo.commit("h", open_table(tmp_path / "t", key="k"), key="k", progress=False)
    got = repo.dataset("h").to_arrow()
    assert got.schema.names == ["__key__", "x", "year", "city"]
    assert got.schema.field("year").type == pa.int64()
    rows = {r["__key__"]: (r["year"], r["city"], r["x"]) for r in got.to_pylist()}
    assert rows == {"a": (2023, "a b", 1), "b": (2024, "x/y", 2), "c": (2024, "q", 3),
                    "d": (None, "q", 4)}


def test_partition_values_that_are_not_plain_integers_stay_text(tmp_path: Path) -> None:
    for part in ("007", "12"):
        (tmp_path / "t" / f"id={part}").mkdir(parents=True)
        pq.write_table(pa.table({"x": [1]}), tmp_path / "t" / f"id={part}" / "p.parquet")
    got = open_table(tmp_path / "t").read_all()
    assert got.schema.field("id").type == pa.string()
    assert sorted(got.column("id").to_pylist()) == ["007", "12"]


def test_an_append_reads_partition_folders_with_the_types_its_dataset_stores(
        run: RunFn, local_root: str, tmp_path: Path) -> None:
    """QA: month=10, month=11 made an int64 column, then month=01 was read as text and the
    append refused, asking to cast a value that lives in a folder name; the other way round
    (text stored, then only digits) too."""
    def folder(name: str, rows: dict[str, str]) -> str:
        for part, key in rows.items():
            (tmp_path / name / part).mkdir(parents=True)
            (tmp_path / name / part / "a.csv").write_text(f"id,v\n{key},1\n")
        return str(tmp_path / name)

    run("commit", "n", "--from", folder("n1", {"month=10": "a", "month=11": "b"}),
        "--key-column", "id")
    run("append", "n", "--from", folder("n2", {"month=01": "c"}), "--key-column", "id")
    run("commit", "s", "--from", folder("s1", {"m=x": "a"}), "--key-column", "id")
    run("append", "s", "--from", folder("s2", {"m=7": "b"}), "--key-column", "id")
    repo = Repository.open(local_root, cache_dir=local_root + "-cache")
    assert repo.dataset("n").to_arrow().select(["__key__", "month"]).to_pylist() == [
        {"__key__": "a", "month": 10}, {"__key__": "b", "month": 11},
        {"__key__": "c", "month": 1}]
    assert [r["m"] for r in repo.dataset("s").to_arrow().to_pylist()] == ["x", "7"]
    assert open_table(tmp_path / "n2").read_all().schema.field("month").type == pa.string()


def test_mixed_partition_layouts_and_clashing_names_are_refused(tmp_path: Path) -> None:
    (tmp_path / "m" / "year=2024").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "m" / "year=2024" / "a.parquet")
    pq.write_table(pa.table({"x": [2]}), tmp_path / "m" / "b.parquet")
    with pytest.raises(SchemaError, match="mixes partition folders"):
        open_table(tmp_path / "m")
    (tmp_path / "c" / "x=1").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "c" / "x=1" / "a.parquet")
    with pytest.raises(SchemaError, match="column 'x' is both a partition folder"):
        open_table(tmp_path / "c")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_an_empty_first_file_is_skipped(tmp_path: Path, fmt: str) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    if fmt == "parquet":
        pq.write_table(pa.table({"id": pa.array([], pa.string()), "x": pa.array([], pa.int64())}),
                       folder / "part-0.parquet")
        pq.write_table(pa.table({"id": ["a", "b"], "x": [1, 2]}), folder / "part-1.parquet")
    else:
        (folder / "a.csv").write_text("id,x\n")
        (folder / "b.csv").write_text("id,x\na,1\nb,2\n")
    got = open_table(folder, key="id").read_all()
    assert got.column("id").to_pylist() == ["a", "b"] and got.column("x").to_pylist() == [1, 2]
    (folder / ("part-1.parquet" if fmt == "parquet" else "b.csv")).unlink()
    with pytest.raises(NotFoundError, match="no rows in its 1 table file"):
        open_table(folder)


def test_an_empty_parquet_part_of_other_types_adds_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "x": [1.5, 2.5]}), folder / "part-0.parquet")
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "x": pa.array([], pa.string()),
                             "y": pa.array([], pa.int64())}), folder / "part-1.parquet")
    got = open_table(folder, key="id").read_all()  # its string x and its y: no rows, no say
    assert got.schema.field("x").type == pa.float64() and "y" not in got.schema.names
    assert got.column("x").to_pylist() == [1.5, 2.5]


def test_an_unclosed_quote_is_refused_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "a.csv"
    bad.write_text('id,x\n1,"oops\n2,b\n3,c\n')
    with pytest.raises(SchemaError, match="opens on line 2 is never closed"):
        open_table(bad).read_all()
    good = tmp_path / "b.csv"  # a quote inside an unquoted value, and "" inside a quoted one
    good.write_text('id,x\n1,5" screen\n2,"a ""b"""\n3,"two\nlines"\n')
    assert open_table(good).read_all().column("x").to_pylist() == [
        '5" screen', 'a "b"', "two\nlines"]


def test_csv_text_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "a.csv").write_bytes(b"id,name\n1,cafe\n")
    (folder / "b.csv").write_bytes(b"id,name\n2,caf\xe9\n")
    with pytest.raises(SchemaError, match=r"b\.csv' is not UTF-8 text: column 'name'"):
        open_table(folder).read_all()
    (tmp_path / "k.csv").write_bytes(b"id,n\ncaf\xe9,1\n")
    with pytest.raises(SchemaError, match="not UTF-8 text: re-encode it"):
        open_table(tmp_path / "k.csv", key="id").read_all()


def test_json_lines_text_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path) -> None:
    lines = [b'{"id": "k%d", "name": "cafe"}' % i for i in range(2000)]
    lines[1500] = b'{"id": "k1500", "name": "caf\xe9"}'  # Latin-1, read by pyarrow unchecked
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(SchemaError, match=r"a\.jsonl', line 1501 is not UTF-8 text .*re-encode"):
        open_table(tmp_path / "a.jsonl").read_all()
    (tmp_path / "k.jsonl").write_bytes(b'{"id": "caf\xe9", "n": 1}\n')  # in the key too
    with pytest.raises(SchemaError, match="line 1 is not UTF-8 text"):
        open_table(tmp_path / "k.jsonl", key="id").read_all()


def test_json_lines_keys_and_text_that_look_like_dates_stay_as_written(
        repo: Repository, tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "2024-01-01", "x": 1}\n'
                                      '{"id": "2024-01-02", "x": 2}\n')
    repo.commit("d", open_table(tmp_path / "a.jsonl", key="id"), key="id", progress=False)
    assert repo.dataset("d").to_arrow()["__key__"].to_pylist() == ["2024-01-01", "2024-01-02"]
    (tmp_path / "s.jsonl").write_text('{"id": "b", "s": "2024-01-01"}\n')
    got = open_table(tmp_path / "s.jsonl", key="id", text_columns=["s"]).read_all()
    assert got.column("s").to_pylist() == ["2024-01-01"]
    # elsewhere pyarrow's reading of times holds: a column of dates is a timestamp column
    assert pa.types.is_timestamp(open_table(tmp_path / "s.jsonl").read_all().schema.field("s").type)


def test_a_categorical_column_in_one_file_and_text_in_the_next_combine(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"c": pa.array(["a", "b"]).dictionary_encode(), "n": [1, 2]}),
                   tmp_path / "t" / "a.parquet")
    pq.write_table(pa.table({"c": ["c", "d"], "n": [3, 4]}), tmp_path / "t" / "b.parquet")
    got = open_table(tmp_path / "t").read_all()
    assert got.schema.field("c").type == pa.string()
    assert got.column("c").to_pylist() == ["a", "b", "c", "d"]


@pytest.mark.parametrize(("name", "rows"), [("csv", "x,y\n1,2\n"), ("jsonl", '{"x": 1, "y": 2}\n')])
def test_a_zero_byte_part_file_is_skipped(tmp_path: Path, name: str, rows: str) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / f"a.{name}").write_text("")
    (tmp_path / "t" / f"b.{name}").write_text(rows)
    assert open_table(tmp_path / "t").read_all().to_pylist() == [{"x": 1, "y": 2}]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_key_without_a_value_names_the_file_and_row(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "t").mkdir()
    first, second = tmp_path / "t" / f"a.{fmt}", tmp_path / "t" / f"b.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.table({"id": ["x", "y"], "v": [1, 2]}), first)
        pq.write_table(pa.table({"id": ["z", None], "v": [3, 4]}), second)
    else:
        first.write_text('{"id": "x", "v": 1}\n{"id": "y", "v": 2}\n')
        second.write_text('{"id": "z", "v": 3}\n{"id": null, "v": 4}\n')
    with pytest.raises(SchemaError, match=r"b\.\w+': key column 'id' has no value in data row 2"):
        open_table(tmp_path / "t", key="id").read_all()


def test_a_csv_header_naming_a_column_twice_is_refused_with_the_file_and_name(
        tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("a,b,a\n1,2,3\n")
    with pytest.raises(SchemaError, match=r"d\.csv', line 1: the header names column 'a' 2 "
                                          r"times \(columns 1, 3\).*rename"):
        open_table(tmp_path / "d.csv").read_all()


@pytest.mark.parametrize(("row", "fields"), [("3,4,5", 3), ("3", 1)])
def test_a_csv_row_with_too_many_or_too_few_fields_names_its_line(
        tmp_path: Path, row: str, fields: int) -> None:
    # a quoted value over two lines and an empty line before it: the line is the file's
    (tmp_path / "r.csv").write_text(f'a,b\n1,2\n\n"x\ny",2\n{row}\n6,7\n')
    with pytest.raises(SchemaError, match=rf"r\.csv', line 6: {fields} fields? where the "
                                          r"header has 2 columns.*one value per column"):
        open_table(tmp_path / "r.csv").read_all()


def test_a_ragged_csv_row_deep_in_a_file_names_its_line(tmp_path: Path) -> None:
    with open(tmp_path / "big.csv", "w") as f:
        f.write("a,b\n")
        f.writelines(f"{i},{i}\n" for i in range(400_000))
        f.write("1,2,3\n")
    with pytest.raises(SchemaError, match=r"big\.csv', line 400002: 3 fields"):
        open_table(tmp_path / "big.csv").read_all()


def _jsonl_with(path: Path, bad: str) -> None:
    """50,000 good lines (past pyarrow's first 1 MiB block), then ``bad`` on line 50,001."""
    with open(path, "w") as f:
        f.writelines(f'{{"i": {i}, "s": "{"x" * 20}", "m": {{"l": [{i}]}}}}\n'
                     for i in range(50_000))
        f.write(bad + "\n" + '{"i": 1, "s": "y", "m": {"l": [2]}}\n')


@pytest.mark.parametrize(("bad", "why"), [
    ('{"i": 1, "s": oops}', r"column 15: Expecting value.*fix the line"),
    ('{"i": 1e400, "s": "a"}', r"the number 1e400 is beyond float64's range.*as a string"),
    ('{"i": "text", "s": "a"}', r"changed from number to string \(i is a string.*one type"),
    ('{"i": 1, "m": {"l": ["x"]}}', r"m/l/\[\] is a string"),
    ('{"i": 1, "i": 2}', r"an object names 'i' twice"),
])
def test_a_bad_json_lines_line_is_named_by_its_line_in_the_file(
        tmp_path: Path, bad: str, why: str) -> None:
    _jsonl_with(tmp_path / "j.jsonl", bad)
    with pytest.raises(SchemaError, match=rf"j\.jsonl', line 50001: .*{why}") as e:
        open_table(tmp_path / "j.jsonl").read_all()
    assert "in row" not in str(e.value)  # pyarrow's count from its block's start


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_times_with_zones_keep_the_instant_in_json_lines_as_in_csv(
        tmp_path: Path, fmt: str) -> None:
    from datetime import UTC, datetime

    values = ["2024-01-01T10:00:00+02:00", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00-0130"]
    path = tmp_path / f"t.{fmt}"
    path.write_text("t\n" + "\n".join(values) + "\n" if fmt == "csv"
                    else "".join(f'{{"t": "{v}"}}\n' for v in values))
    got = open_table(path).read_all()
    assert got.schema.field("t").type == pa.timestamp("s", "UTC")
    utc = [datetime(2024, 1, 1, h, m, tzinfo=UTC) for h, m in ((8, 0), (10, 0), (11, 30))]
    assert [v.astimezone(UTC) for v in got.column("t").to_pylist()] == utc


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_times_of_which_only_some_name_a_zone_stay_text_as_written(
        tmp_path: Path, fmt: str) -> None:
    values = ["2024-01-01T10:00:00+02:00", "2024-01-01T10:00:00"]
    path = tmp_path / f"t.{fmt}"
    path.write_text("t\n" + "\n".join(values) + "\n" if fmt == "csv"
                    else "".join(f'{{"t": "{v}"}}\n' for v in values))
    got = open_table(path).read_all()
    assert got.schema.field("t").type == pa.string()
    assert got.column("t").to_pylist() == values


def test_json_lines_times_without_zones_stay_naive(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text('{"t": "2024-01-01T10:00:00"}\n{"t": null}\n')
    got = open_table(tmp_path / "t.jsonl").read_all()
    assert got.schema.field("t").type == pa.timestamp("s")


def test_json_lines_times_are_parsed_with_the_file_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.json as pjson

    real, files = pjson.read_json, []

    def counting(source: object, *args: object, **kwargs: object) -> pa.Table:
        if not isinstance(source, pa.BufferReader):  # the first lines, to find the times
            files.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pjson, "read_json", counting)
    rows = [f'{{"id": {i}, "t": "2024-01-01T10:00:00+02:00", "n": "2024-01-0{i + 1}", '
            '"v": 1.5}' for i in range(3)]
    (tmp_path / "t.jsonl").write_text("\n".join(rows) + "\n")
    got = open_table(tmp_path / "t.jsonl", key="n").read_all()
    assert len(files) == 1
    assert got.schema.names == ["id", "t", "n", "v"]  # the file's order
    assert got.schema.field("t").type == pa.timestamp("s", "UTC")
    assert got.column("n").to_pylist() == ["2024-01-01", "2024-01-02", "2024-01-03"]


def test_json_lines_times_first_found_after_the_first_mib_keep_their_zones(
        tmp_path: Path) -> None:
    from datetime import UTC, datetime

    head = '{"id": 0, "t": null, "u": "2024-01-01T10:00:00", "w": "2024-01-01"}\n' * 20000
    tail = ('{"id": 1, "t": "2024-01-01T10:00:00+02:00", "u": "x", "w": "2024-01-02 10:00"}'
            '\n')
    (tmp_path / "t.jsonl").write_text(head + tail)
    got = open_table(tmp_path / "t.jsonl").read_all()
    assert got.schema.names == ["id", "t", "u", "w"]
    assert got.schema.field("t").type == pa.timestamp("s", "UTC")
    assert got.column("t")[-1].as_py() == datetime(2024, 1, 1, 8, tzinfo=UTC)
    assert got.schema.field("u").type == pa.string()  # a time, then text: text as written
    assert got.column("u")[-1].as_py() == "x"
    assert got.schema.field("w").type == pa.timestamp("s")
    assert got.column("w")[-1].as_py() == datetime(2024, 1, 2, 10)


@pytest.mark.parametrize("value", ["1e400", "-1E+400", "9" * 320 + ".5", "1" + "0" * 300 + "e10"])
def test_a_csv_number_beyond_float64_is_refused_not_stored_as_inf(
        tmp_path: Path, value: str) -> None:
    (tmp_path / "n.csv").write_text(f"x,y\n1.5,a\n{value},b\n")
    shown = re.escape(value[:30])
    with pytest.raises(SchemaError, match=rf"n\.csv', column 'x': the number {shown}.* beyond "
                                          r"float64's range.*stored as inf"):
        open_table(tmp_path / "n.csv").read_all()


def test_csv_inf_as_written_stays_inf(tmp_path: Path) -> None:
    (tmp_path / "n.csv").write_text("x\n1.5\ninf\n-Infinity\n")
    got = open_table(tmp_path / "n.csv").read_all().column("x").to_pylist()
    assert got == [1.5, float("inf"), float("-inf")]


def test_a_json_lines_number_beyond_float64_is_refused_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "n.jsonl").write_text('{"x": 1.5}\n{"x": 1e400}\n')
    with pytest.raises(SchemaError, match=r"n\.jsonl', line 2: .*the number 1e400 is beyond "
                                          r"float64's range.*as a string"):
        open_table(tmp_path / "n.jsonl").read_all()


def test_a_json_lines_key_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "k.jsonl").write_bytes(b'{"a": "x"}\n{"\xe9": "y"}\n')
    with pytest.raises(SchemaError, match=r"k\.jsonl', line 2 is not UTF-8 text"):
        open_table(tmp_path / "k.jsonl").read_all()


def test_a_type_change_after_a_huge_integer_names_the_line_that_changed(tmp_path: Path) -> None:
    (tmp_path / "h.jsonl").write_text('{"a": 1, "b": ' + "1" * 400 + '}\n{"a": 2}\n{"a": "x"}\n')
    with pytest.raises(SchemaError, match=r"h\.jsonl', line 3: .*a is a string"):
        open_table(tmp_path / "h.jsonl").read_all()


def test_sparks_json_output_folder_is_read_as_json_lines(run: RunFn, local_root: str,
                                                          tmp_path: Path) -> None:
    """QA: Spark's df.write.json writes JSON Lines as part-*.json beside _SUCCESS; the folder
    was committed as files (a sample per part file), and --as table found "no table"."""
    spark = tmp_path / "spark"
    (spark / "year=2024").mkdir(parents=True)
    (spark / "_SUCCESS").write_text("")
    (spark / "year=2024" / "part-00000-a.json").write_text('{"id":"x","a":1}\n{"id":"y","a":2}\n')
    (spark / "year=2024" / ".part-00000-a.json.crc").write_text("crc")
    (spark / "year=2024" / "part-00001-a.json").write_text("")
    run("commit", "s", "--from", str(spark), "--key-column", "id")
    repo = Repository.open(local_root, cache_dir=local_root + "-cache")
    assert repo.dataset("s").to_arrow().to_pylist() == [
        {"__key__": "x", "a": 1, "year": 2024}, {"__key__": "y", "a": 2, "year": 2024}]
    plain = tmp_path / "docs"  # no _SUCCESS: a .json file is a sample's file
    plain.mkdir()
    (plain / "a.json").write_text('{"a": 1}')
    run("commit", "f", "--from", str(plain))
    assert repo.dataset("f").schema.names == ["__key__", "json"]
