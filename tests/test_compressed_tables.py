"""Compressed table files (``part-0.csv.gz``, ``.csv.zst``, Spark's ``.json.gz``) are read
through a decompressor, with the same rows and types as the uncompressed files; a damaged
stream is an IntegrityError naming the file; a ``.parquet.gz`` is still refused."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.ingest import open_table

ROWS = "id,name,score\n" + "".join(f"{i},n{i},{i / 2}\n" for i in range(120))


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _rows(repo: dl.Repository, name: str) -> list[tuple[object, ...]]:
    table = repo.dataset(name).to_arrow().drop_columns(["__key__"])
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_a_folder_of_gzip_and_zstd_csv_parts_commits_the_rows_of_the_plain_files(
        run: RunFn, local_root: str, cache_dir: str, tmp_path: Path) -> None:
    lines = ROWS.splitlines(keepends=True)
    head, first, second = lines[0], "".join(lines[1:81]), "".join(lines[81:])
    packed = tmp_path / "packed"
    packed.mkdir()
    (packed / "_SUCCESS").touch()
    (packed / "part-0.csv.gz").write_bytes(gzip.compress((head + first).encode()))
    (packed / "part-1.csv.zst").write_bytes(
        zstandard.ZstdCompressor().compress((head + second).encode()))
    (packed / "part-2.csv.gz").write_bytes(gzip.compress(b""))  # an empty part: no rows
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "part-0.csv").write_text(head + first)
    (plain / "part-1.csv").write_text(head + second)
    run("commit", "packed", "--from", str(packed))
    run("commit", "plain", "--from", str(plain))
    repo = dl.Repository.open(local_root, cache_dir=cache_dir)
    assert repo.dataset("packed").schema == repo.dataset("plain").schema
    assert _rows(repo, "packed") == _rows(repo, "plain")
    assert len(repo.dataset("packed")) == 120
    one = tmp_path / "one.csv.gz"
    one.write_bytes(gzip.compress(ROWS.encode()))
    assert open_table(str(one)).read_all().num_rows == 120  # a single file too


def test_spark_json_gz_parts_keep_their_timestamp_types(
        run: RunFn, local_root: str, cache_dir: str, tmp_path: Path) -> None:
    lines = "".join(json.dumps({"id": i, "t": "2024-01-02T03:04:05Z", "s": f"x{i}"}) + "\n"
                    for i in range(30))
    for name, data in (("gz", gzip.compress(lines.encode())), ("plain", lines.encode())):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "_SUCCESS").touch()
        (folder / ("part-0.json.gz" if name == "gz" else "part-0.json")).write_bytes(data)
        run("commit", name, "--from", str(folder))
    repo = dl.Repository.open(local_root, cache_dir=cache_dir)
    assert str(repo.dataset("gz").schema.field("t").type) == "timestamp[s, tz=UTC]"
    assert repo.dataset("gz").schema == repo.dataset("plain").schema
    assert _rows(repo, "gz") == _rows(repo, "plain")


def test_a_truncated_or_damaged_stream_is_an_integrity_error_naming_the_file(
        run: RunFn, local_root: str, tmp_path: Path) -> None:
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(gzip.compress(ROWS.encode())[:-30])
    r = run("commit", "t", "--from", str(cut), rc=1)
    assert "cut.csv.gz: its gzip stream is damaged or cut short" in r.err
    assert "`gzip -t cut.csv.gz`" in r.err and "Traceback" not in r.err
    bad = tmp_path / "bad.csv.zst"
    data = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(ROWS.encode()))
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    r = run("commit", "t", "--from", str(bad), rc=1)
    assert "bad.csv.zst: its zstd stream is damaged" in r.err and "zstd -t" in r.err
    with pytest.raises(dl.IntegrityError, match=r"cut\.csv\.gz"):
        open_table(str(cut)).read_all()
    assert not dl.Repository.open(local_root).datasets()  # nothing half-committed


def test_csv_checks_read_the_decompressed_text(run: RunFn, tmp_path: Path) -> None:
    quote = tmp_path / "q.csv.gz"
    quote.write_bytes(gzip.compress(b'a,b\n1,"open\n2,3\n'))
    r = run("commit", "t", "--from", str(quote), rc=1)
    assert "quoted value that opens on line 2 is never closed" in r.err
    ragged = tmp_path / "r.csv.zst"
    ragged.write_bytes(zstandard.ZstdCompressor().compress(b"a,b\n1,2\n3,4,5\n"))
    r = run("commit", "t", "--from", str(ragged), rc=1)
    assert "line 3" in r.err, r.err


def test_a_csv_gz_on_s3_is_read_in_place(s3_root: str, cache_dir: str) -> None:
    import os

    import s3fs

    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": os.environ["DLOAD_ENDPOINT_URL"]},
                           skip_instance_cache=True)
    bucket = s3_root.split("/")[2]
    fs.pipe_file(f"{bucket}/in/t.csv.gz", gzip.compress(ROWS.encode()))
    repo = dl.Repository.open(s3_root, cache_dir=cache_dir)
    table = open_table(f"s3://{bucket}/in/t.csv.gz").read_all()
    repo.commit("t", table, progress=False)
    assert len(repo.dataset("t")) == 120
    assert sorted(repo.dataset("t").to_arrow().column("id").to_pylist()) == list(range(120))


def test_a_folder_of_tables_beside_a_parquet_gz_is_refused_not_stored_as_file_blobs(
        run: RunFn, local_root: str, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    spark = tmp_path / "spark"
    spark.mkdir()
    (spark / "_SUCCESS").touch()
    pq.write_table(pa.table({"a": [1, 2]}), spark / "part-0.parquet")
    pq.write_table(pa.table({"a": [3]}), tmp_path / "p1.parquet")
    (spark / "part-1.parquet.gz").write_bytes(gzip.compress((tmp_path / "p1.parquet")
                                                            .read_bytes()))
    r = run("commit", "t", "--from", str(spark), rc=1)
    assert "holds tables and 'part-1.parquet.gz', a Parquet table compressed with gzip" in r.err
    assert "`gzip -dk part-1.parquet.gz`" in r.err
    assert not dl.Repository.open(local_root).datasets()
    with pytest.raises(dl.ConfigError, match="a Parquet table compressed with gzip"):
        open_table(str(spark / "part-1.parquet.gz"))  # not "a tar.gz archive"


def test_advice_for_other_codecs_and_encodings_fits_a_compressed_table(
        run: RunFn, tmp_path: Path) -> None:
    import bz2

    (tmp_path / "y.csv.bz2").write_bytes(bz2.compress(ROWS.encode()))
    r = run("commit", "t", "--from", str(tmp_path / "y.csv.bz2"), rc=1)
    assert "`bzip2 -dc y.csv.bz2 | zstd -o y.csv.zst`" in r.err and ".tar.zst" not in r.err
    (tmp_path / "l.csv.gz").write_bytes(gzip.compress("a,b\n1,caf\xe9\n".encode("latin1")))
    r = run("commit", "t", "--from", str(tmp_path / "l.csv.gz"), rc=1)
    assert "`gzip -dc l.csv.gz | iconv -f latin1 -t utf-8 | gzip -c > utf8-l.csv.gz`" in r.err


def test_a_cut_zstd_file_is_an_integrity_error_and_several_frames_read_whole(
        run: RunFn, tmp_path: Path) -> None:
    text = ROWS.encode() * 50
    whole = zstandard.ZstdCompressor().compress(text)
    cut = tmp_path / "cut.csv.zst"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(dl.IntegrityError, match=r"cut\.csv\.zst: its zstd stream is damaged or "
                                                r"cut short"):
        open_table(str(cut)).read_all()
    frames = tmp_path / "frames.csv.zst"
    lines = ROWS.splitlines(keepends=True)
    frames.write_bytes(zstandard.ZstdCompressor().compress("".join(lines[:50]).encode())
                       + zstandard.ZstdCompressor().compress("".join(lines[50:]).encode()))
    assert open_table(str(frames)).read_all().num_rows == 120


def test_a_compressed_csv_infers_types_from_as_large_a_block_as_the_plain_file(
        tmp_path: Path) -> None:
    body = "v\n" + "1\n" * 1_500_000 + "1.5\n"  # 3 MB of text, compressing 1000x
    (tmp_path / "plain.csv").write_text(body)
    (tmp_path / "packed.csv.gz").write_bytes(gzip.compress(body.encode()))
    plain = open_table(str(tmp_path / "plain.csv")).read_all()
    packed = open_table(str(tmp_path / "packed.csv.gz")).read_all()
    assert str(plain.schema.field("v").type) == str(packed.schema.field("v").type) == "double"
    assert packed.num_rows == 1_500_001


def test_excluding_the_parquet_gz_commits_the_folder_as_tables(
        run: RunFn, local_root: str, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    spark = tmp_path / "spark"
    spark.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), spark / "part-0.parquet")
    (spark / "part-1.parquet.gz").write_bytes(gzip.compress(b"PAR1"))
    assert "--exclude part-1.parquet.gz)" in run("commit", "t", "--from", str(spark),
                                                  rc=1).err
    run("commit", "t", "--from", str(spark), "--exclude", "*.parquet.gz")
    assert dl.Repository.open(local_root).dataset("t").schema.names == ["__key__", "a"]


def test_the_utf8_hint_of_a_compressed_json_lines_file_decompresses_first(
        run: RunFn, tmp_path: Path) -> None:
    (tmp_path / "l.jsonl.gz").write_bytes(gzip.compress('{"a": "caf\xe9"}\n'.encode("latin1")))
    r = run("commit", "t", "--from", str(tmp_path / "l.jsonl.gz"), rc=1)
    assert "`gzip -dc l.jsonl.gz | iconv -f latin1 -t utf-8 | gzip -c > utf8-l.jsonl.gz`" in r.err


def test_appending_the_same_keyless_table_again_warns_how_to_undo_it(
        run: RunFn, local_root: str, tmp_path: Path) -> None:
    import json

    day = tmp_path / "day.csv"
    day.write_text(ROWS)
    other = tmp_path / "other.csv"
    other.write_text(ROWS.replace("n1,", "m1,"))
    run("commit", "logs", "--from", str(other))
    assert "warning" not in run("append", "logs", "--from", str(day)).err
    r = run("append", "logs", "--from", str(day))  # run again from the shell history
    version = r.out.split()[-1]
    assert ("warning: the 120 rows appended equal, value for value, the 120 rows before them"
            in r.err)
    assert f"`dload rm logs --version {version[:12]} --yes` undoes it" in r.err
    assert len(dl.Repository.open(local_root).dataset("logs")) == 360  # warned, not refused
    out = json.loads(run("append", "logs", "--from", str(other), "--json").out)
    assert out["repeats_rows_before"] is None
    keyed = tmp_path / "keyed.csv"
    keyed.write_text(ROWS)
    run("commit", "k", "--from", str(keyed), "--key-column", "id")
    r = run("append", "k", "--from", str(keyed), "--key-column", "id", rc=1)
    assert "120 key(s) are already stored" in r.err  # keys from the input: a repeat clashes


def test_the_repeat_check_sees_nan_rows_and_a_large_append_quickly(
        run: RunFn, tmp_path: Path) -> None:
    import json

    nan = tmp_path / "nan.csv"
    nan.write_text("a,b\n1,NaN\n2,3.5\n")
    run("commit", "n", "--from", str(nan))
    assert json.loads(run("append", "n", "--from", str(nan), "--json").out)[
        "repeats_rows_before"] == 2  # NaN equals NaN here, as the same file's rows are
    big = tmp_path / "big.csv"
    big.write_text("a,b\n" + "".join(f"{i},{i % 7}\n" for i in range(200_000)))
    run("commit", "big", "--from", str(big))
    out = json.loads(run("append", "big", "--from", str(big), "--json").out)
    assert out["repeats_rows_before"] == 200_000
