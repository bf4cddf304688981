"""Manifests and names read from the root are not trusted (invariant 8); shards are plain
Parquet that DuckDB and polars read directly; the format round-trips (property tests)."""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readback import read_back, shard_paths

from dload_arrow import IntegrityError, InvalidNameError, NotFoundError, Repository
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import manifest_path

SMALL: dict[str, Any] = {"shard_size": 2000, "row_group_size": 500, "progress": False}


@pytest.fixture
def committed(repo: Repository) -> Manifest:
    rows = [(f"k{i:03d}", {"x": i, "s": f"v{i}" * 4, "b": bytes([i])}) for i in range(80)]
    return repo.commit("good", rows, **SMALL).manifest


def hostile(m: Manifest, *, info: dict[str, Any] | None = None,
            digest: str | None = None) -> bytes:
    """The manifest's bytes with its JSON metadata or first shard digest replaced."""
    table = m.table
    meta = dict(table.schema.metadata)
    if info is not None:
        meta[b"dload"] = json.dumps({**m.info, **info}).encode()
    if digest is not None:
        digests = table.column("digest").to_pylist()
        digests[0] = digest
        idx = table.schema.get_field_index("digest")
        table = table.set_column(idx, "digest", pa.array(digests, pa.string()))
    return _ipc(table.replace_schema_metadata(meta))


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def test_a_valid_manifest_round_trips_through_bytes(committed: Manifest) -> None:
    data = committed.to_bytes()
    again = Manifest.from_bytes(data, committed.version)
    assert again.version == committed.version == hashlib.sha256(data).hexdigest()
    assert again.schema.equals(committed.schema) and again.num_rows == 80


def test_unknown_format_version_is_refused(committed: Manifest) -> None:
    with pytest.raises(IntegrityError, match=r"format 99.*upgrade"):
        Manifest.from_bytes(hostile(committed, info={"format": 99}))


@pytest.mark.parametrize("digest", ["abc", "A" * 64, "../../../etc/passwd", "0" * 63 + "g", ""])
def test_shard_digest_that_is_not_64_hex_is_refused(committed: Manifest, digest: str) -> None:
    with pytest.raises(InvalidNameError, match="sha256"):
        Manifest.from_bytes(hostile(committed, digest=digest))


@pytest.mark.parametrize("name", ["a/b", "..", "../up", "x/../y", "/abs", "", "a\\b"])
def test_manifest_naming_a_hostile_dataset_is_refused(committed: Manifest, name: str) -> None:
    with pytest.raises(InvalidNameError):
        Manifest.from_bytes(hostile(committed, info={"name": name}))


def test_parent_with_a_bad_digest_is_refused(committed: Manifest) -> None:
    bad = [{"name": "good", "version": "not-a-digest"}]
    with pytest.raises(InvalidNameError, match="parent"):
        Manifest.from_bytes(hostile(committed, info={"parents": bad}))
    with pytest.raises(InvalidNameError):
        Manifest.from_bytes(hostile(committed, info={
            "parents": [{"name": "../etc", "version": "0" * 64}]
        }))


def test_key_index_with_a_bad_digest_is_refused(committed: Manifest) -> None:
    with pytest.raises(InvalidNameError, match="key index"):
        Manifest.from_bytes(hostile(committed, info={"key_index": {"digest": "../x"}}))


def test_bytes_that_do_not_hash_to_the_id_are_refused(committed: Manifest) -> None:
    data = committed.to_bytes()
    with pytest.raises(IntegrityError, match="corrupt"):
        Manifest.from_bytes(data, "0" * 64)
    with pytest.raises(IntegrityError):
        Manifest.from_bytes(data[:-10] + b"0123456789", committed.version)


def test_garbage_and_foreign_arrow_files_are_refused() -> None:
    with pytest.raises(IntegrityError, match="Arrow IPC"):
        Manifest.from_bytes(b"not arrow at all")
    with pytest.raises(IntegrityError, match="not a dload_arrow manifest"):
        Manifest.from_bytes(_ipc(pa.table({"x": [1]})))
    with pytest.raises(IntegrityError, match="JSON"):
        Manifest.from_bytes(_ipc(pa.table({"x": [1]}).replace_schema_metadata({"dload": "{"})))


def test_tampered_manifest_in_the_root_is_refused_on_read(
    repo: Repository, committed: Manifest
) -> None:
    path = manifest_path("good", committed.version)
    repo.storage.write(path, hostile(committed, info={"meta": {"evil": True}}))
    fresh = Repository.open(repo.storage.url, cache_dir=repo.settings.cache_dir)
    with pytest.raises(IntegrityError, match="corrupt"):
        fresh.dataset("good")


def test_manifest_stored_under_another_dataset_name_is_refused(
    repo: Repository, committed: Manifest
) -> None:
    data = committed.to_bytes()
    repo.storage.write(manifest_path("other", committed.version), data)
    repo.storage.write("datasets/other/refs/latest",
                       json.dumps({"version": committed.version, "seq": 1}).encode())
    with pytest.raises(InvalidNameError, match="names dataset 'good'"):
        repo.dataset("other")


def test_hostile_ref_content_is_refused(repo: Repository, committed: Manifest) -> None:
    repo.storage.write("datasets/good/refs/latest",
                       json.dumps({"version": "../../x", "seq": 1}).encode())
    with pytest.raises(IntegrityError, match="not a sha256"):
        repo.dataset("good")
    repo.storage.write("datasets/good/refs/latest", b"{broken")
    with pytest.raises(IntegrityError, match="not a valid ref"):
        repo.dataset("good")


@pytest.mark.parametrize("name", ["a/b", "../x", "..", "", ".hidden", "x" * 129, "sp ace",
                                  "a\\b", "ü"])
def test_bad_dataset_names_are_refused_by_the_api(repo: Repository, name: str) -> None:
    with pytest.raises(InvalidNameError, match="not allowed"):
        repo.commit(name, [("a", {"x": 1})], progress=False)
    with pytest.raises(InvalidNameError):
        repo.dataset(name)
    with pytest.raises(InvalidNameError):
        repo.versions(name)
    assert not Path(repo.storage.url[len("file://"):], "datasets").exists() or (
        repo.datasets() == []
    )


def test_bad_tag_names_are_refused(repo: Repository, committed: Manifest) -> None:
    for tag in ("a/b", "..", "latest", committed.version[:8], "deadbeef"):
        with pytest.raises(InvalidNameError):  # hex only: it would shadow version prefixes
            repo.tag("good", committed.version, tag)
    assert repo.tag("good", committed.version, "v8") == committed.version  # not all hex
    with pytest.raises(NotFoundError):
        repo.tag("good", "f" * 64, "v1")


def test_duckdb_reads_local_shards_as_plain_parquet(
    repo: Repository, committed: Manifest
) -> None:
    paths = [repo.storage.local_path(p) for p in shard_paths(repo, "good")]
    assert len(paths) > 1 and all(paths)
    con = duckdb.connect()
    summary = con.execute(
        "SELECT count(*), sum(x), count(DISTINCT __key__) FROM read_parquet(?)", [paths]
    ).fetchone()
    assert summary == (80, sum(range(80)), 80)
    first = con.execute(
        "SELECT __key__, s, b FROM read_parquet(?) ORDER BY __key__ LIMIT 1", [paths[0]]
    ).fetchone()
    assert first == ("k000", "v0" * 4, b"\x00")


def test_polars_scans_local_shards_as_plain_parquet(
    repo: Repository, committed: Manifest
) -> None:
    paths = [str(repo.storage.local_path(p)) for p in shard_paths(repo, "good")]
    df = pl.scan_parquet(paths).filter(pl.col("x") >= 70).select("__key__", "x").collect()
    assert df["x"].to_list() == list(range(70, 80))
    assert df["__key__"].to_list() == [f"k{i:03d}" for i in range(70, 80)]


def test_shards_carry_statistics_and_a_page_index(repo: Repository, committed: Manifest) -> None:
    import pyarrow.parquet as pq

    path = repo.storage.local_path(shard_paths(repo, "good")[0])
    meta = pq.ParquetFile(path).metadata
    col = meta.row_group(0).column(1)
    assert col.compression == "ZSTD"
    assert col.statistics is not None and col.statistics.has_min_max
    assert col.has_offset_index


# --- property: the format round-trips and ids ignore input chunking ----------------------

COLUMNS = {
    "i": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "f": (pa.float64(), st.floats(allow_nan=False, width=64)),
    "s": (pa.string(), st.text(max_size=12)),
    "b": (pa.binary(), st.binary(max_size=12)),
}


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(1, 40))
    keys = draw(st.lists(st.text(min_size=1, max_size=8), min_size=n, max_size=n, unique=True))
    cols: dict[str, pa.Array] = {"key": pa.array(keys, pa.string())}
    for name, (typ, values) in COLUMNS.items():
        vals = draw(st.lists(st.none() | values, min_size=n, max_size=n))
        cols[name] = pa.array(vals, typ)
    return pa.table(cols)


@st.composite
def chunkings(draw: st.DrawFn, n: int) -> list[int]:
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=5))))
    return [c for c in cuts if 0 < c < n]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables(), data=st.data())
def test_random_tables_round_trip_and_ids_ignore_chunking(
    repo: Repository, table: pa.Table, data: st.DataObject
) -> None:
    name = f"p{uuid.uuid4().hex[:8]}"
    opts: dict[str, Any] = {"shard_size": 1500, "row_group_size": 300, "progress": False}
    whole = repo.commit(name, table, key="key", **opts)
    got = read_back(repo, name, whole.version)
    assert got.column("__key__").to_pylist() == table.column("key").to_pylist()
    assert got.drop_columns(["__key__"]).equals(table.drop_columns(["key"]))

    cuts = data.draw(chunkings(table.num_rows))
    bounds = [0, *cuts, table.num_rows]
    batches = [
        b for lo, hi in itertools.pairwise(bounds)
        for b in table.slice(lo, hi - lo).to_batches()
    ]
    reader = pa.RecordBatchReader.from_batches(table.schema, batches)
    chunked = repo.commit(name, reader, key="key", **opts)
    assert chunked.version == whole.version
    assert chunked.shards_uploaded == 0


def test_a_version_of_another_dataset_is_refused_even_when_cached(
        repo: Repository, committed: Manifest) -> None:
    repo.commit("other", [("k", {"x": 1})], progress=False)
    repo.dataset("good")  # its manifest is now in this repository's memory
    with pytest.raises(InvalidNameError, match="names dataset 'good'"):
        repo.dataset("other", committed.version)
    with pytest.raises(InvalidNameError):
        repo.tag("other", committed.version, "oops")
    with pytest.raises(InvalidNameError):
        repo.pin("other", committed.version)
    assert "oops" not in repo.refs("other")


def _with_table(m: Manifest, table: pa.Table) -> bytes:
    return _ipc(table.replace_schema_metadata(m.table.schema.metadata))


def test_structurally_broken_manifests_are_integrity_errors(committed: Manifest) -> None:
    t = committed.table
    cases = {
        "lacks column": _with_table(committed, t.drop_columns(["digest"])),
        "negative": _with_table(committed, t.set_column(
            t.schema.get_field_index("bytes"), "bytes",
            pa.array([-5] * t.num_rows, pa.int64()))),
        "row offsets": _with_table(committed, t.set_column(
            t.schema.get_field_index("rows"), "rows",
            pa.array([10**12] * t.num_rows, pa.int64()))),
        "not a JSON object": _ipc(t.replace_schema_metadata({"dload": "[1, 2]"})),
        "parents": hostile(committed, info={"parents": "abc"}),
        "key index": hostile(committed, info={"key_index": [1]}),
        "sample schema": hostile(committed, info={"schema": None}),
        "does not decode": hostile(committed, info={"schema": "!!!"}),
    }
    for what, data in cases.items():
        with pytest.raises(IntegrityError, match=what):
            Manifest.from_bytes(data)


@pytest.mark.parametrize("bad", ["A" * 64, "a" * 63, "a" * 64 + "\n", None, 7])
def test_a_shard_digest_that_is_not_sha256_hex_is_refused(committed: Manifest, bad: object
                                                           ) -> None:
    t = committed.table
    i = t.schema.get_field_index("digest")
    digests = t.column("digest").to_pylist()
    digests[-1] = bad
    typ = pa.int64() if isinstance(bad, int) else pa.string()
    col = pa.array([bad] * len(digests), typ) if isinstance(bad, int) else pa.array(digests, typ)
    with pytest.raises((IntegrityError, InvalidNameError),
                       match=r"digest|not all sha256"):
        Manifest.from_bytes(_with_table(committed, t.set_column(i, "digest", col)))


def test_digests_stored_as_large_strings_are_accepted(committed: Manifest) -> None:
    t = committed.table
    i = t.schema.get_field_index("digest")
    wide = t.set_column(i, "digest", t.column("digest").cast(pa.large_string()))
    assert Manifest.from_bytes(_with_table(committed, wide)).num_rows == committed.num_rows


@pytest.mark.parametrize("name", ["photos\n", "photos\n\n"])
def test_a_dataset_name_ending_in_a_newline_is_refused(repo: Repository, name: str) -> None:
    """Python's ``$`` matches before a final newline: names and digests are matched whole."""
    with pytest.raises(InvalidNameError):
        repo.commit(name, [("k", {"x": 1})], progress=False)
    assert name not in repo.datasets()


def test_a_version_a_newer_release_wrote_is_kept_not_removed(repo: Repository) -> None:
    from dload_arrow.store.refs import move_ref

    repo.commit("d", [("a", {"x": 1})], progress=False)
    data = hostile(repo.manifest("d"), info={"format": 99})
    vid = hashlib.sha256(data).hexdigest()
    repo.storage.write(manifest_path("d", vid), data)
    move_ref(repo.storage, "d", "latest", vid)
    with pytest.raises(IntegrityError) as e:
        repo.dataset("d")
    said = str(e.value)
    assert "upgrade dload-arrow" in said and "do not remove it" in said
    assert "dload rm" not in said
