"""QA migrate59, porting from WebDataset, MosaicML and LitData: a token column that held only
empty lists was stored as list<null> without a word and every later append was refused with
pyarrow's internals; one Latin-1 caption refused a whole tar with a fix that renames a member
inside it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.errors import SchemaError


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def test_a_column_of_empty_lists_is_warned_of_and_its_append_says_how(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    with pytest.warns(UserWarning, match=r"'tokens' \(list<item: null>\) had no value"):
        repo.commit("tok", [("a", {"tokens": [], "n": 1}), ("b", {"tokens": [], "n": 2})],
                    progress=False)
    with pytest.raises(SchemaError) as e:
        repo.append("tok", [("c", {"tokens": [5, 6], "n": 3})], progress=False)
    assert "list<item: null>" in str(e.value)
    assert "schema=pa.schema([('tokens', pa.list_(pa.int64()))])" in str(e.value)


def test_a_commit_with_values_or_a_given_schema_is_not_warned_of(local_root: str) -> None:
    import warnings

    import pyarrow as pa

    repo = dl.Repository.open(local_root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.commit("a", [("a", {"tokens": []}), ("b", {"tokens": [1]})], progress=False)
        schema = pa.schema([("__key__", pa.string()), ("tokens", pa.list_(pa.int64()))])
        repo.commit("b", [("a", {"tokens": []})], schema=schema, progress=False)
    repo.append("b", [("c", {"tokens": [5]})], progress=False)
    assert [list(s["tokens"]) for s in repo.dataset("b").samples()] == [[], [5]]


def test_the_cli_append_into_a_list_null_column_names_no_pyarrow_internals(
        run: RunFn, tmp_path: Path) -> None:
    first = tmp_path / "part0.jsonl"
    first.write_text('{"id": "a", "tokens": []}\n{"id": "b", "tokens": []}\n')
    more = tmp_path / "part1.jsonl"
    more.write_text('{"id": "c", "tokens": [5, 6]}\n')
    r = run("commit", "tok", "--from", str(first), "--key-column", "id")
    assert "had no value" in r.err
    r = run("append", "tok", "--from", str(more), "--key-column", "id", rc=1)
    assert "cast_null" not in r.err and "Cast the column to" not in r.err
    assert "holds no value" in r.err and "commit the files with values first" in r.err


def test_a_caption_that_is_not_utf8_names_the_exclude_that_leaves_it_out(
        run: RunFn, tmp_path: Path) -> None:
    tar = tmp_path / "shard.tar"
    with tarfile.open(tar, "w") as tf:
        for name, data in (("000001.jpg", b"\xff\xd8x"), ("000001.txt", b"caf\xe9"),
                           ("000002.jpg", b"\xff\xd8y"), ("000002.txt", b"ok")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    r = run("commit", "caps", "--from", str(tar), rc=1)
    assert "--exclude /000001.txt" in r.err and "iconv" in r.err
    run("commit", "caps", "--from", str(tar), "--exclude", "000001.txt")


def _hf_folder(folder: Path) -> None:
    """What datasets.save_to_disk writes: Arrow IPC stream shards and json sidecars."""
    import json

    import pyarrow as pa

    folder.mkdir()
    t = pa.table({"text": [f"s{i}" for i in range(100)], "label": list(range(100))})
    for i in range(2):
        with pa.ipc.new_stream(str(folder / f"data-0000{i}-of-00002.arrow"), t.schema) as w:
            w.write_table(t.slice(i * 50, 50))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}}))
    (folder / "state.json").write_text(json.dumps({"_data_files": []}))


def test_a_huggingface_save_to_disk_folder_commits_its_rows(run: RunFn, tmp_path: Path,
                                                             local_root: str) -> None:
    _hf_folder(tmp_path / "hf")
    r = run("commit", "hf", "--from", str(tmp_path / "hf"), "--json")
    assert r.json["rows"] == 100 and r.json["source"]["kind"] == "table"
    rows = list(dl.Repository.open(local_root).dataset("hf").samples())
    assert [x["text"] for x in rows] == [f"s{i}" for i in range(100)]
    assert [x["label"] for x in rows] == list(range(100))


def test_feather_and_arrow_files_are_tables(run: RunFn, tmp_path: Path, local_root: str) -> None:
    import pyarrow as pa
    import pyarrow.feather as feather

    t = pa.table({"id": ["a", "b"], "v": [1.5, None], "n": pa.array([None, None], pa.int32())})
    feather.write_feather(t, str(tmp_path / "t.feather"))  # the IPC file format
    run("commit", "f", "--from", str(tmp_path / "t.feather"), "--key-column", "id")
    ds = dl.Repository.open(local_root).dataset("f")
    assert ds.schema.field("n").type == pa.int32()  # typed: a null column keeps its type
    assert [(s["__key__"], s["v"]) for s in ds.samples()] == [("a", 1.5), ("b", None)]
    (tmp_path / "bad.arrow").write_bytes(b"not arrow at all")
    r = run("commit", "g", "--from", str(tmp_path / "bad.arrow"), rc=1)
    assert "not a readable Arrow IPC file or stream" in r.err


def test_tab_separated_files_are_tables(run: RunFn, tmp_path: Path, local_root: str) -> None:
    import gzip

    (tmp_path / "t.tsv").write_text("id\tname\tzip\na\tAnn, Jr\t01234\nb\tBo\t02345\n")
    (tmp_path / "u.tsv.gz").write_bytes(gzip.compress(b"id\tname\tzip\nc\tCy\t03456\n"))
    run("commit", "t", "--from", str(tmp_path / "t.tsv"), "--key-column", "id",
        "--text-column", "zip")
    run("append", "t", "--from", str(tmp_path / "u.tsv.gz"), "--key-column", "id")
    rows = list(dl.Repository.open(local_root).dataset("t").samples())
    assert [(r["__key__"], r["name"], r["zip"]) for r in rows] == [
        ("a", "Ann, Jr", "01234"), ("b", "Bo", "02345"), ("c", "Cy", "03456")]
    (tmp_path / "tabs.csv").write_text("id\tname\n1\tAnn\n")  # tabs in a .csv: named
    r = run("commit", "c", "--from", str(tmp_path / "tabs.csv"))
    assert "holds no comma but tabs: name the file .tsv" in r.err


def test_codes_in_a_folder_of_csv_files_are_warned_of_once(tmp_path: Path) -> None:
    import warnings

    from dload_arrow.ingest import open_table

    (tmp_path / "t").mkdir()
    for i in range(3):
        (tmp_path / "t" / f"p{i}.csv").write_text(f"id,zip,phone\na{i},01234,+4930123456\n")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        reader = open_table(tmp_path / "t", key="id")
        assert reader.read_all().num_rows == 3
    codes = [w for w in got if "hold codes" in str(w.message)]
    assert len(codes) == 1 and "zip" in str(codes[0].message) and "phone" in str(codes[0].message)


def test_a_keyless_append_to_a_keyed_dataset_is_warned_of(local_root: str) -> None:
    import warnings

    import pyarrow as pa

    repo = dl.Repository.open(local_root)
    repo.commit("k", pa.table({"id": ["a", "b"], "v": [1, 2]}), key="id", progress=False)
    with pytest.warns(UserWarning, match=r"rows have keys of their own \(e.g. 'a'\)"):
        repo.append("k", pa.table({"v": [3]}), progress=False)
    repo.commit("n", pa.table({"v": [1, 2]}), progress=False)  # keyed by row numbers: quiet
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.append("n", pa.table({"v": [3]}), progress=False)
    assert [s["__key__"] for s in repo.dataset("n").samples()][-1] == "000000000002"


def test_tsv_has_no_quoting(run: RunFn, tmp_path: Path, local_root: str) -> None:
    # QA review59b: CSV quoting dropped the quotes of '"Hi" she said', and an unbalanced quote
    # swallowed the rest of the file
    (tmp_path / "q.tsv").write_text('id\ttext\n1\t"Hi" she said\n2\t"never closed\n3\tc\n')
    run("commit", "q", "--from", str(tmp_path / "q.tsv"), "--key-column", "id")
    rows = list(dl.Repository.open(local_root).dataset("q").samples())
    assert [r["text"] for r in rows] == ['"Hi" she said', '"never closed', "c"]
    (tmp_path / "r.tsv").write_text("id\ttext\n1\ta\n2\tyes, and no\textra\n")
    r = run("commit", "r", "--from", str(tmp_path / "r.tsv"), rc=1)
    assert "line 3: 3 fields where the header has 2 columns" in r.err
    assert "without CSV quoting, as its first MiB showed none" in r.err
    assert "name the file .tsv" not in r.err
    (tmp_path / "c.tsv").write_text("id,text,label\n1,a,0\n")
    r = run("commit", "c", "--from", str(tmp_path / "c.tsv"))
    assert "holds no tab but ','" in r.err and "name the file .csv" in r.err


def test_a_huggingface_datasetdict_folder_is_refused_with_its_splits(
        run: RunFn, tmp_path: Path) -> None:
    import json

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    for split in ("train", "test"):
        _hf_folder(hf / split)
    r = run("commit", "hf", "--from", str(hf), rc=1)
    assert "DatasetDict" in r.err and "splits: test, train" in r.err
    run("commit", "hf-train", "--from", str(hf / "train"))


def test_arrow_files_cut_short_or_of_another_kind_are_refused(run: RunFn,
                                                              tmp_path: Path) -> None:
    import pyarrow as pa

    t = pa.table({"x": list(range(100))})
    full = tmp_path / "full.arrow"
    ends = []
    with open(full, "wb") as f:
        w = pa.ipc.new_stream(f, t.schema)
        for b in t.to_batches(max_chunksize=25):
            w.write_batch(b)
            f.flush()
            ends.append(f.tell())
        w.close()
    (tmp_path / "cut.arrow").write_bytes(full.read_bytes()[:ends[1]])  # no end-of-stream
    r = run("commit", "c", "--from", str(tmp_path / "cut.arrow"), rc=1)
    assert "without its end-of-stream marker" in r.err
    (tmp_path / "empty.arrow").write_bytes(b"")
    assert "is empty" in run("commit", "e", "--from", str(tmp_path / "empty.arrow"), rc=1).err
    (tmp_path / "v1.feather").write_bytes(b"FEA1" + b"\0" * 60)
    assert "Feather v1" in run("commit", "v", "--from", str(tmp_path / "v1.feather"), rc=1).err
    run("commit", "ok", "--from", str(full))


def test_twelve_digit_ids_count_as_keys_of_their_own(local_root: str) -> None:
    import pyarrow as pa

    repo = dl.Repository.open(local_root)
    repo.commit("p", pa.table({"upc": ["036000291452", "036000291453"], "v": [1, 2]}),
                key="upc", progress=False)
    with pytest.warns(UserWarning, match="keys of their own"):
        repo.append("p", pa.table({"v": [3]}), progress=False)


def test_a_struct_field_without_a_value_is_named(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    with pytest.warns(UserWarning, match=r"'m' \(m\.a: null\) had no value"):
        repo.commit("s", [("a", {"m": {"a": None, "b": 1}})], progress=False)


def test_tsv_written_with_csv_quoting_is_read_with_it(local_root: str, tmp_path: Path) -> None:
    import pandas as pd

    from dload_arrow.ingest import open_table

    r_tsv = tmp_path / "r.tsv"  # R's write.table(sep="\t"): every name and text quoted
    r_tsv.write_text('"id"\t"text"\t"score"\n"1"\t"a"\t0.5\n"2"\t"b"\t1.5\n')
    pd_tsv = tmp_path / "pd.tsv"  # pandas: only values holding tabs or line breaks quoted
    pd.DataFrame({"id": [1, 2], "text": ["line one\nline two", "tab\there"]}).to_csv(
        pd_tsv, sep="\t", index=False)
    repo = dl.Repository.open(local_root)
    repo.commit("r", open_table(r_tsv), progress=False)
    repo.commit("p", open_table(pd_tsv), progress=False)
    assert [(s["id"], s["text"], s["score"]) for s in repo.dataset("r").samples()] == [
        (1, "a", 0.5), (2, "b", 1.5)]
    assert [s["text"] for s in repo.dataset("p").samples()] == ["line one\nline two",
                                                                "tab\there"]


def test_a_pandas_tsv_with_quotes_in_its_values(local_root: str, tmp_path: Path) -> None:
    import pandas as pd

    from dload_arrow.ingest import open_table

    path = tmp_path / "q.tsv"  # pandas quotes a value holding a quote, doubling it
    pd.DataFrame({"id": [1, 2], "text": ['say "hi"', "plain"]}).to_csv(path, sep="\t",
                                                                      index=False)
    assert open_table(path).read_all().column("text").to_pylist() == ['say "hi"', "plain"]


def test_several_tables_are_pointed_at_their_folder(run: RunFn, tmp_path: Path) -> None:
    (tmp_path / "st").mkdir()
    for i in (1, 2):
        (tmp_path / "st" / f"part-{i}.csv").write_text(f"a,b\n{i},2\n")
    r = run("commit", "t", "--from", str(tmp_path / "st" / "part-*.csv"), rc=1)
    assert "several tables are read as one from a folder" in r.err and "--as" not in r.err
    run("commit", "t", "--from", str(tmp_path / "st"), "--include", "part-*.csv")


def test_tsv_quoting_is_judged_in_linear_time_and_not_by_lone_quote_tokens(
        local_root: str, tmp_path: Path) -> None:
    import os

    from dload_arrow.ingest import open_table
    from dload_arrow.ingest.tsv_quoting import tsv_quoting

    # CoNLL: one token a line, '"' a token: no quoting (QA review59d: rows were merged)
    conll = tmp_path / "pos.tsv"
    conll.write_text('tok\ttag\nHe\tPRP\nsaid\tVBD\n"\t``\nhi\tUH\n"\t\'\'\n.\t.\n')
    assert [r["tok"] for r in open_table(conll).read_all().to_pylist()] == [
        "He", "said", '"', "hi", '"', "."]
    # one quote that never closes in a long file: judged at once (a regex took minutes)
    long = tmp_path / "long.tsv"
    long.write_text('id\ttext\n1\t"' + "word " * 60_000 + "\n2\tend\n")
    assert tsv_quoting(str(long)) is None
    # a rewritten file is judged again
    f = tmp_path / "w.tsv"
    f.write_text("id\ttext\n1\tplain\n")
    assert tsv_quoting(str(f)) is None
    f.write_text('id\ttext\n1\t"say ""hi"""\n2\t"x"\n')
    os.utime(f, ns=(1, 1))
    assert tsv_quoting(str(f)) == "double"
    # a quoted .tsv whose quote never closes is refused, as a .csv is
    bad = tmp_path / "bad.tsv"
    bad.write_text('id\ttext\n1\t"say ""hi"""\n2\t"never closed\n3\tc\n')
    with pytest.raises(SchemaError, match="never closed"):
        open_table(bad).read_all()


def test_tsv_quoting_by_r_and_pandas_line_breaks_and_a_bom(tmp_path: Path) -> None:
    from dload_arrow.ingest import open_table

    cases = {
        "nl.tsv": ('id\ttext\n1\t"first line\nsecond line"\n2\tplain\n',
                   ["first line\nsecond line", "plain"]),
        "bom.tsv": ('\ufeff"id"\t"text"\n1\t"plain"\n2\t"b"\n', ["plain", "b"]),
    }
    for name, (body, want) in cases.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
        table = open_table(tmp_path / name).read_all()
        assert table.column(table.schema.names[-1]).to_pylist() == want, name
    # R's default backslash escapes are refused (pyarrow's would drop every backslash); a
    # value ending in a backslash is no escape
    (tmp_path / "r.tsv").write_text('"id"\t"text"\n1\t"plain"\n2\t"she said \\"hi\\""\n')
    with pytest.raises(SchemaError, match="qmethod='double'"):
        open_table(tmp_path / "r.tsv").read_all()
    (tmp_path / "rd.tsv").write_text('"id"\t"text"\n1\t"C:\\temp\\"\n2\t"b"\n')
    assert open_table(tmp_path / "rd.tsv").read_all().column("text").to_pylist() == [
        "C:\\temp\\", "b"]
    # a .csv with a tab before a quote is no quoted value (a tab opens a .tsv's only)
    (tmp_path / "t.csv").write_text('id,note\n1,col1\t"col2\n2,ok\n')
    assert open_table(tmp_path / "t.csv").read_all().column("note").to_pylist() == [
        'col1\t"col2', "ok"]


def test_utf16_text_and_r_row_names_are_named(tmp_path: Path) -> None:
    from dload_arrow.ingest import open_table

    (tmp_path / "excel.tsv").write_bytes('id\ttext\r\n1\tplain\r\n2\tb\r\n'.encode("utf-16"))
    with pytest.raises(SchemaError, match="is UTF-16 text"):
        open_table(tmp_path / "excel.tsv").read_all()
    (tmp_path / "r.tsv").write_text('"id"\t"text"\n"1"\t1\t"a"\n"2"\t2\t"b"\n')
    with pytest.raises(SchemaError, match=r"row\.names=FALSE"):
        open_table(tmp_path / "r.tsv").read_all()


def test_tables_in_several_folders_are_pointed_at_one_that_holds_them(
        run: RunFn, tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / "data" / sub).mkdir(parents=True)
        (tmp_path / "data" / sub / "part.tsv").write_text("x\ty\n1\t2\n")
    r = run("commit", "t", "--from", str(tmp_path / "data" / "*" / "part.tsv"), rc=1)
    assert f"--from {tmp_path / 'data'}" in r.err and "'*.tsv'" in r.err


def test_tsv_readings_are_chosen_by_row_widths(tmp_path: Path) -> None:
    # QA review59f: SST-2 sentences merged, backslashes eaten, paragraphs split
    from dload_arrow.ingest import open_table

    cases = {
        "sst2.tsv": ('sentence\tlabel\n"the best film of the year , period \t1\n'
                     'the ending , however , is flat . "\t0\nfun\t1\n',
                     ['"the best film of the year , period ',
                      'the ending , however , is flat . "', "fun"]),
        "slash.tsv": ('id\ttext\n1\t"say ""hi"""\n2\t"C:\\\\new\\\\table"\n3\t"tab\there\\\\"\n',
                      ['say "hi"', "C:\\\\new\\\\table", "tab\there\\\\"]),
        "para.tsv": ('id\ttext\n1\t"Dear Sir,\n\nthanks"\n2\thello\n',
                     ["Dear Sir,\n\nthanks", "hello"]),
        "qqp.tsv": ('id\tq1\tq2\n1\t"What is a good laptop?\tWhich laptop should I buy"\n',
                    ['Which laptop should I buy"']),
    }
    for name, (body, want) in cases.items():
        (tmp_path / name).write_text(body)
        table = open_table(tmp_path / name).read_all()
        column = "sentence" if name == "sst2.tsv" else table.schema.names[-1]
        assert table.column(column).to_pylist() == want, name
    # one value holding the delimiter is not R's row names
    (tmp_path / "n.csv").write_text("id,city,pop\n1,Washington, D.C.,700000\n2,Bonn,300000\n")
    with pytest.raises(SchemaError) as e:
        open_table(tmp_path / "n.csv").read_all()
    assert "row.names" not in str(e.value)


def test_a_semicolon_file_with_decimal_commas_is_no_r_row_names(tmp_path: Path) -> None:
    # QA review59h: every row held one comma (the decimal mark), which read as R's row names
    from dload_arrow.ingest import open_table

    (tmp_path / "prices.csv").write_text("item;price;qty\napple;2,50;3\npear;1,75;4\n")
    with pytest.raises(SchemaError) as e:
        open_table(tmp_path / "prices.csv").read_all()
    assert "holds no comma but ';'" in str(e.value) and "row.names" not in str(e.value)


def test_a_remote_tsv_rewritten_is_judged_again(s3_root: str, s3_server: Any) -> None:
    import s3fs

    from dload_arrow.ingest import open_table

    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    url = f"s3://{bucket}/raw/t.tsv"
    fs.pipe_file(f"{bucket}/raw/t.tsv", b'id\ttext\n1\t"tab\there"\n2\tb\n')
    assert open_table(url).read_all().column("text").to_pylist() == ["tab\there", "b"]
    fs.pipe_file(f"{bucket}/raw/t.tsv", b'id\ttext\n1\t"unbalanced quote\n2\tend" here\n')
    assert open_table(url).read_all().column("text").to_pylist() == [
        '"unbalanced quote', 'end" here']
