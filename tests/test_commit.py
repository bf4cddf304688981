"""Commit: every accepted input survives exactly; recommits are free; errors name the culprit.

Data is read back with plain pyarrow.parquet over the shards the manifest lists (see
readback.py), independent of dload_arrow's read path.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from readback import read_back, shard_paths
from s3server import S3Server

from dload_arrow import Repository, SchemaError
from dload_arrow.store.rows import field_shape

SMALL: dict[str, Any] = {"shard_size": 3000, "row_group_size": 800, "progress": False}
N = 120


def sample(i: int) -> dict[str, Any]:
    return {
        "i": i * 7 - 300,
        "f": i / 3,
        "s": f"text-{i}-é",
        "b": bytes([i % 256, 0, 255]) * (i % 5),
        "l": list(range(i % 4)),
        "t": (np.arange(6, dtype=np.float32).reshape(2, 3) + i),
        "st": {"a": i, "name": f"n{i}"},
    }


def pairs(n: int = N) -> list[tuple[str, dict[str, Any]]]:
    return [(f"k{i:04d}", sample(i)) for i in range(n)]


def arrow_table(n: int = N) -> pa.Table:
    rows = [sample(i) for i in range(n)]
    return pa.table({
        "id": pa.array([f"k{i:04d}" for i in range(n)]),
        "i": pa.array([r["i"] for r in rows], pa.int64()),
        "f": pa.array([r["f"] for r in rows], pa.float64()),
        "s": pa.array([r["s"] for r in rows], pa.string()),
        "b": pa.array([r["b"] for r in rows], pa.binary()),
        "l": pa.array([r["l"] for r in rows], pa.list_(pa.int64())),
        "t": pa.array([r["t"].reshape(-1) for r in rows], pa.list_(pa.float32(), 6)),
        "st": pa.array([r["st"] for r in rows]),
    })


@pytest.fixture(params=["local", "s3"])
def root_repo(request: pytest.FixtureRequest, cache_dir: str) -> Repository:
    root = request.getfixturevalue(f"{request.param}_root")
    return Repository.open(root, cache_dir=cache_dir)


def _as_lists(table: pa.Table) -> dict[str, list[Any]]:
    return {n: table.column(n).to_pylist() for n in table.column_names}


def test_pairs_round_trip_every_column_type(root_repo: Repository) -> None:
    v = root_repo.commit("pairs", pairs(), **SMALL)
    assert v.num_rows == N and v.shards_total > 1 and v.shards_uploaded == v.shards_total
    got = read_back(root_repo, "pairs")
    assert got.column("__key__").to_pylist() == [k for k, _ in pairs()]
    for col in ("i", "f", "s", "b", "l", "st"):
        assert got.column(col).to_pylist() == [s[col] for _, s in pairs()], col
    assert pa.types.is_int64(got.schema.field("i").type)
    assert pa.types.is_binary(got.schema.field("b").type)
    assert pa.types.is_struct(got.schema.field("st").type)
    tensor = got.schema.field("t")
    assert pa.types.is_fixed_size_list(tensor.type) and tensor.type.value_type == pa.float32()
    assert field_shape(tensor) == (2, 3)
    assert field_shape(root_repo.dataset("pairs").schema.field("t")) == (2, 3)
    values = got.column("t").combine_chunks().flatten().to_numpy().reshape(N, 2, 3)
    np.testing.assert_array_equal(values, np.stack([s["t"] for _, s in pairs()]))


def test_arrow_table_round_trips_exactly(root_repo: Repository) -> None:
    table = arrow_table()
    root_repo.commit("tbl", table, key="id", **SMALL)
    got = read_back(root_repo, "tbl")
    assert got.column("__key__").to_pylist() == table.column("id").to_pylist()
    expected = table.drop_columns(["id"])
    assert got.drop_columns(["__key__"]).equals(expected)


def test_record_batch_reader_round_trips(root_repo: Repository) -> None:
    table = arrow_table()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=7))
    v = root_repo.commit("rbr", reader, key="id", **SMALL)
    assert v.num_rows == N
    got = read_back(root_repo, "rbr")
    assert got.drop_columns(["__key__"]).equals(table.drop_columns(["id"]))
    # Chunking of the input does not change the bytes, so the id equals the table commit's.
    assert root_repo.commit("rbr", table, key="id", **SMALL).version == v.version


def test_polars_dataframe_with_key_round_trips(root_repo: Repository) -> None:
    table = arrow_table().drop_columns(["t"])
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    root_repo.commit("pl", df, key="id", **SMALL)
    got = read_back(root_repo, "pl")
    assert got.column("__key__").to_pylist() == df["id"].to_list()
    for col in ("i", "f", "s", "b", "l", "st"):
        assert got.column(col).to_pylist() == df[col].to_list(), col


def test_pandas_dataframe_with_key_round_trips(root_repo: Repository) -> None:
    rows = pairs()
    df = pd.DataFrame({
        "name": [k for k, _ in rows],
        "i": [s["i"] for _, s in rows],
        "f": [s["f"] for _, s in rows],
        "s": [s["s"] for _, s in rows],
        "b": [s["b"] for _, s in rows],
        "l": [s["l"] for _, s in rows],
    })
    root_repo.commit("pd", df, key="name", **SMALL)
    got = read_back(root_repo, "pd")
    assert got.column("__key__").to_pylist() == df["name"].tolist()
    for col in ("i", "f", "s", "b", "l"):
        assert got.column(col).to_pylist() == [s[col] for _, s in rows], col


def test_table_without_key_gets_generated_sortable_keys(root_repo: Repository) -> None:
    table = arrow_table().drop_columns(["id"])
    v = root_repo.commit("gen", table, **SMALL)
    got = read_back(root_repo, "gen")
    keys = got.column("__key__").to_pylist()
    assert keys == [f"{i:012d}" for i in range(N)] and keys == sorted(keys)
    assert got.drop_columns(["__key__"]).equals(table)
    assert v.manifest.keys_sorted


def test_existing_key_column_is_used_without_key_argument(repo: Repository) -> None:
    table = pa.table({"__key__": ["b", "a", "c"], "x": [1, 2, 3]})
    repo.commit("own", table, progress=False)
    got = read_back(repo, "own")
    assert got.column("__key__").to_pylist() == ["b", "a", "c"]
    assert got.column("x").to_pylist() == [1, 2, 3]
    assert not repo.manifest("own").keys_sorted and repo.manifest("own").key_index is not None


def test_same_commit_twice_same_id_and_zero_shard_puts(
    s3_repo: Repository, s3_server: S3Server
) -> None:
    v1 = s3_repo.commit("twice", pairs(), **SMALL)
    assert s3_server.count("PUT", "shards/") == v1.shards_total > 1
    s3_server.clear()
    v2 = s3_repo.commit("twice", pairs(), **SMALL)
    assert v2.version == v1.version
    assert v2.shards_uploaded == 0 and v2.bytes_uploaded == 0
    # No PUT at all, not even a touch (a server-side self-copy): the stored version lists
    # every shard, which protects them from gc.
    assert s3_server.count("PUT", "shards/") == 0
    assert s3_server.count("PUT", "manifests/") == 0
    # latest already points there: no ref write, no log entry (a no-op commit)
    assert s3_server.count("PUT", "refs/") == 0 and s3_server.count("PUT", "/log/") == 0
    assert len(s3_repo.log("twice")) == 1


def test_same_samples_give_the_same_id_on_different_roots(
    local_root: str, s3_root: str, tmp_path: Any
) -> None:
    local = Repository.open(local_root, cache_dir=str(tmp_path / "c1"))
    remote = Repository.open(s3_root, cache_dir=str(tmp_path / "c2"))
    a = local.commit("same", pairs(), meta={"m": 1}, recipe="x = 1\n", **SMALL)
    b = remote.commit("same", pairs(), meta={"m": 1}, recipe="x = 1\n", **SMALL)
    assert a.version == b.version
    assert local.storage.read(f"datasets/same/manifests/{a.version}.arrow") == (
        remote.storage.read(f"datasets/same/manifests/{b.version}.arrow")
    )


def test_bad_sample_with_given_schema_names_key_and_column(repo: Repository) -> None:
    rows: list[tuple[str, dict[str, Any]]] = [(f"k{i}", {"x": i}) for i in range(10)]
    rows[6] = ("k6", {"x": "not a number"})
    schema = pa.schema([pa.field("x", pa.int64())])
    with pytest.raises(SchemaError, match=r"'k6'.*'x'"):
        repo.commit("bad", rows, schema=schema, progress=False)
    assert repo.datasets() == []


def test_bad_sample_after_inference_names_key_and_column(repo: Repository) -> None:
    rows = [(f"k{i:05d}", {"x": i, "y": "ok"}) for i in range(3000)]
    rows[2500] = ("k02500", {"x": "oops", "y": "ok"})
    with pytest.raises(SchemaError, match=r"'k02500'.*'x'"):
        repo.commit("bad", rows, progress=False)


def test_mixed_types_in_the_first_samples_name_key_and_column(repo: Repository) -> None:
    rows = [("a", {"x": 1}), ("b", {"x": 2}), ("c", {"x": "three"})]
    with pytest.raises(SchemaError, match=r"'x'") as err:
        repo.commit("bad", rows, progress=False)
    assert "'c'" in str(err.value)


def test_unknown_column_in_a_later_sample_is_refused(repo: Repository) -> None:
    rows = [("a", {"x": 1}), ("b", {"x": 2, "surprise": 3})]
    with pytest.raises(SchemaError, match=r"'b'.*surprise"):
        repo.commit("bad", rows, progress=False)


def test_duplicate_keys_are_refused_and_nothing_is_published(repo: Repository) -> None:
    rows = [(f"k{i}", {"x": i}) for i in range(50)] + [("k7", {"x": 99})]
    with pytest.raises(SchemaError, match=r"duplicate keys.*'k7'"):
        repo.commit("dup", rows, progress=False)
    assert repo.datasets() == []


def test_table_with_duplicate_keys_is_refused(repo: Repository) -> None:
    with pytest.raises(SchemaError, match="duplicate"):
        repo.commit("dup", pa.table({"k": ["a", "b", "a"], "x": [1, 2, 3]}), key="k",
                    progress=False)


@pytest.mark.parametrize("frame", ["arrow", "pandas", "polars"])
def test_a_table_with_duplicate_keys_is_refused_before_any_shard_is_uploaded(
    s3_repo: Repository, s3_server: S3Server, frame: str
) -> None:
    n = 2000
    table = pa.table({"id": [f"k{i % (n - 1)}" for i in range(n)],
                      "blob": [bytes([i % 251]) * 512 for i in range(n)]})
    data = {"arrow": table, "pandas": table.to_pandas(), "polars": pl.from_arrow(table)}[frame]
    s3_server.clear()
    with pytest.raises(SchemaError, match=r"1 duplicate keys.*'k0'"):
        s3_repo.commit("dup", data, key="id", shard_size="64KiB", row_group_size="16KiB",
                       progress=False)
    assert s3_server.count("PUT", "shards/") == 0


def test_empty_commit_is_refused(repo: Repository) -> None:
    with pytest.raises(SchemaError, match="empty"):
        repo.commit("empty", [], progress=False)


def test_append_reuses_parent_shards_and_records_the_parent(root_repo: Repository) -> None:
    first = root_repo.commit("app", pairs(60), **SMALL)
    more = [(f"k{i:04d}", sample(i)) for i in range(60, 90)]
    second = root_repo.append("app", more, progress=False)
    parent_digests = first.manifest.table.column("digest").to_pylist()
    digests = second.manifest.table.column("digest").to_pylist()
    assert digests[: len(parent_digests)] == parent_digests
    assert second.shards_uploaded == len(digests) - len(parent_digests) >= 1
    assert second.manifest.parents == [
        {"name": "app", "version": first.version, "relation": "append"}
    ]
    assert root_repo.dataset("app").version == second.version
    got = read_back(root_repo, "app")
    assert got.column("__key__").to_pylist() == [f"k{i:04d}" for i in range(90)]
    assert got.column("i").to_pylist() == [sample(i)["i"] for i in range(90)]
    assert root_repo.manifest("app").keys_sorted
    # Row offsets continue across the parent's shards and the new ones.
    offsets = [s.row_offset for s in second.manifest.shards]
    rows = [s.rows for s in second.manifest.shards]
    assert offsets == [sum(rows[:i]) for i in range(len(rows))]


def test_append_refuses_keys_the_parent_already_has(repo: Repository) -> None:
    repo.commit("app", pairs(20), progress=False)
    before = repo.dataset("app").version
    with pytest.raises(SchemaError, match=r"already stored in its latest version.*'k0003'"):
        repo.append("app", [("k0003", sample(3))], progress=False)
    assert repo.dataset("app").version == before


def test_append_with_another_schema_is_refused(repo: Repository) -> None:
    repo.commit("app", [("a", {"x": 1})], progress=False)
    with pytest.raises(SchemaError, match="schema"):
        repo.append("app", [("b", {"y": "other"})], progress=False)


def test_append_out_of_order_keys_builds_a_key_index(repo: Repository) -> None:
    repo.commit("app", [("m", {"x": 1}), ("n", {"x": 2})], progress=False)
    v = repo.append("app", [("a", {"x": 3})], progress=False)
    assert not v.manifest.keys_sorted
    index = v.manifest.key_index
    assert index is not None
    assert repo.storage.exists(f"shards/{index['digest'][:2]}/{index['digest']}.parquet")
    import pyarrow.parquet as pq

    idx = pq.read_table(pa.BufferReader(
        repo.storage.read(f"shards/{index['digest'][:2]}/{index['digest']}.parquet")
    ))
    assert idx.column("__key__").to_pylist() == ["a", "m", "n"]
    assert idx.column("row").to_pylist() == [2, 0, 1]


def test_schema_argument_is_honoured(repo: Repository) -> None:
    schema = pa.schema([pa.field("x", pa.int16()), pa.field("y", pa.float32()),
                        pa.field("z", pa.large_string())])
    rows = [(f"k{i}", {"x": i, "y": i / 2, "z": str(i)}) for i in range(10)]
    repo.commit("typed", rows, schema=schema, progress=False)
    got = read_back(repo, "typed")
    assert got.schema.field("x").type == pa.int16()
    assert got.schema.field("y").type == pa.float32()
    assert got.schema.field("z").type == pa.large_string()
    assert repo.dataset("typed").schema.names == ["__key__", "x", "y", "z"]
    assert got.column("x").to_pylist() == list(range(10))


def test_schema_argument_casts_a_table(repo: Repository) -> None:
    table = pa.table({"k": ["a", "b"], "x": pa.array([1, 2], pa.int64())})
    repo.commit("cast", table, key="k", schema=pa.schema([pa.field("x", pa.int32())]),
                progress=False)
    assert read_back(repo, "cast").schema.field("x").type == pa.int32()


def test_meta_and_recipe_are_stored_verbatim(repo: Repository) -> None:
    meta = {"source": "unit test", "nested": {"list": [1, 2.5, None, "ü"]}, "n": 3}
    recipe = "import x\n\n\tdef f():  # tabs, trailing spaces   \n    return 'ünïcode'\n"
    repo.commit("m", [("a", {"x": 1})], meta=meta, recipe=recipe, progress=False)
    ds = repo.dataset("m")
    assert ds.meta == meta and ds.recipe == recipe
    # Changing only the meta changes the id: it is part of the manifest bytes.
    v2 = repo.commit("m", [("a", {"x": 1})], meta={**meta, "n": 4}, recipe=recipe,
                     progress=False)
    assert v2.version != ds.version and v2.shards_uploaded == 0


def test_meta_that_is_not_json_is_refused(repo: Repository) -> None:
    with pytest.raises(ValueError, match="JSON"):
        repo.commit("m", [("a", {"x": 1})], meta={"obj": object()}, progress=False)


def test_manifest_records_shard_layout_and_stats(repo: Repository) -> None:
    v = repo.commit("stats", pairs(), **SMALL)
    m = repo.manifest("stats")
    paths = shard_paths(repo, "stats")
    for entry, path in zip(m.shards, paths, strict=True):
        data = repo.storage.read(path)
        assert len(data) == entry.bytes
        assert sum(entry.rg_rows) == entry.rows
        assert len(entry.rg_offsets) == len(entry.rg_bytes) == len(entry.rg_rows)
        assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    assert m.num_rows == v.num_rows == N
    assert m.table.column("min.i").to_pylist()[0] == sample(0)["i"]
    assert "min.st" not in m.table.column_names  # statistics only for scalar columns
    info = json.loads(m.table.schema.metadata[b"dload"])
    assert info["name"] == "stats" and info["format"] == 3  # its tensor column "t"


def test_append_on_s3_reads_only_the_key_column_of_the_parent(
    s3_repo: Repository, s3_server: S3Server
) -> None:
    blobs = [(f"k{i:04d}", {"blob": np.random.default_rng(i).bytes(4000)}) for i in range(100)]
    first = s3_repo.commit("big", blobs, shard_size=100_000, row_group_size=20_000,
                           progress=False)
    assert first.shards_total > 1
    s3_server.clear()
    s3_repo.append("big", [("k0050x", {"blob": b"new"})], progress=False)
    # Checking for duplicate keys reads footers and key column chunks, not the blobs, and only
    # of the shards whose key range holds a new key.
    assert 0 < s3_server.bytes_sent("shards/") < first.bytes_total // 4
    s3_server.clear()
    s3_repo.append("big", [("k9999", {"blob": b"new"})], progress=False)
    assert s3_server.bytes_sent("shards/") == 0  # after every stored key: nothing to read
