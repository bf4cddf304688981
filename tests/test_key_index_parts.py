"""The key index in parts (``store/key_index.py``): an append to a dataset whose keys are not
sorted writes a part for its own rows only; lookups search every part; too many parts merge;
gc, verify and diff see every part; manifests that need no parts keep their exact bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import runner

from dload_arrow import ConflictError, IntegrityError, InvalidNameError, Repository, SchemaError
from dload_arrow.store.key_index import MAX_PARTS
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import shard_path

SMALL: dict[str, Any] = {"shard_size": 4000, "row_group_size": 1000, "progress": False}


def shuffled(n: int, prefix: str = "k", seed: int = 0) -> list[str]:
    keys = [f"{prefix}{i:05d}" for i in range(n)]
    random.Random(seed).shuffle(keys)
    return keys


def table(keys: list[str], start: int = 0) -> pa.Table:
    return pa.table({"__key__": keys, "x": list(range(start, start + len(keys)))})


def unsorted_with_appends(repo: Repository, appends: int, n: int = 500,
                          each: int = 20) -> list[list[str]]:
    """An unsorted commit of ``n`` rows then ``appends`` unsorted appends of ``each``: the keys
    of each version's own rows."""
    keys = [shuffled(n)]
    repo.commit("d", table(keys[0]), **SMALL)
    for j in range(appends):
        keys.append(shuffled(each, prefix=f"a{j:02d}-", seed=j))
        repo.append("d", table(keys[-1], n + j * each), progress=False)
    return keys


def index_table(repo: Repository, part: dict[str, Any]) -> pa.Table:
    return pq.read_table(pa.BufferReader(repo.storage.read(shard_path(part["digest"]))))


def test_each_append_uploads_only_a_part_for_its_own_rows(repo: Repository) -> None:
    first = repo.commit("d", table(shuffled(3000)), **SMALL).manifest
    (full,) = first.key_index_parts
    assert isinstance(first.key_index, dict) and first.info["format"] == 1
    parent = first
    for j in range(3):
        keys = shuffled(20, prefix=f"a{j}-", seed=j)
        v = repo.append("d", table(keys, parent.num_rows), progress=False)
        m = v.manifest
        parts = m.key_index_parts
        assert parts[:-1] == parent.key_index_parts and len(parts) == j + 2
        assert m.info["format"] == 2 and isinstance(m.key_index, list)
        new = parts[-1]
        assert new["rows"] == 20 and new["bytes"] < full["bytes"] // 10
        data = m.num_bytes - parent.num_bytes  # the new data shards
        assert v.bytes_uploaded == data + new["bytes"] + v.manifest_bytes_uploaded
        idx = index_table(repo, new)
        assert idx.column("__key__").to_pylist() == sorted(keys)
        rows = dict(zip(keys, range(parent.num_rows, m.num_rows), strict=True))
        assert idx.column("row").to_pylist() == [rows[k] for k in sorted(keys)]
        parent = m


@pytest.mark.parametrize("root", ["local_root", "memory_root", "s3_root"])
def test_lookups_find_keys_of_every_part(root: str, cache_dir: str,
                                         request: pytest.FixtureRequest) -> None:
    repo = Repository.open(request.getfixturevalue(root), cache_dir=cache_dir,
                           cache_budget="unlimited")
    keys = unsorted_with_appends(repo, 3)
    ds = repo.dataset("d")
    assert len(ds.manifest.key_index_parts) == 4
    every = [k for ks in keys for k in ks]
    picked = [ks[i] for ks in keys for i in (0, len(ks) // 2, -1)]
    for k in picked:
        assert k in ds and ds.get(k)["x"] == every.index(k)
    got = ds.take(picked[::-1], columns=["x"]).column("x").to_pylist()
    assert got == [every.index(k) for k in picked[::-1]]
    assert "a00-00005x" not in ds and "zzz" not in ds and ds.get("a", default=None) is None
    view = ds.where("x >= 500")  # a filtered view: keys outside it are not found
    assert keys[2][0] in view and keys[0][0] not in view


def test_too_many_parts_merge_the_tail_and_lookups_still_work(repo: Repository) -> None:
    keys = unsorted_with_appends(repo, MAX_PARTS - 1)
    parts = repo.manifest("d").key_index_parts
    assert len(parts) == MAX_PARTS
    keys.append(shuffled(20, prefix="b-", seed=99))
    m = repo.append("d", table(keys[-1], 500 + 20 * (MAX_PARTS - 1)), progress=False).manifest
    merged = m.key_index_parts
    assert merged[0] == parts[0] and len(merged) == 2  # the big first part is kept
    tail = [k for ks in keys[1:] for k in ks]
    idx = index_table(repo, merged[1])
    assert idx.column("__key__").to_pylist() == sorted(tail)
    assert idx.column("row").to_pylist() == [500 + tail.index(k) for k in sorted(tail)]
    ds = repo.dataset("d")
    for ks in keys:
        assert ds.take([ks[0], ks[-1]]).column("__key__").to_pylist() == [ks[0], ks[-1]]


def test_a_tail_as_big_as_the_first_part_merges_into_one(repo: Repository) -> None:
    keys = unsorted_with_appends(repo, MAX_PARTS - 1, n=50)  # 50 rows, then 7 x 20
    keys.append(shuffled(20, prefix="b-", seed=99))
    m = repo.append("d", table(keys[-1], 50 + 20 * (MAX_PARTS - 1)), progress=False).manifest
    (one,) = m.key_index_parts
    assert isinstance(m.key_index, dict) and m.info["format"] == 1  # one part: format 1
    every = [k for ks in keys for k in ks]
    idx = index_table(repo, one)
    assert idx.column("__key__").to_pylist() == sorted(every)
    assert idx.column("row").to_pylist() == [every.index(k) for k in sorted(every)]
    ds = repo.dataset("d")
    assert all(k in ds for k in every)


def test_gc_keeps_every_part_of_live_versions_and_reclaims_removed_ones(
    repo: Repository,
) -> None:
    keys = unsorted_with_appends(repo, 2)
    parts = repo.manifest("d").key_index_parts
    assert len(parts) == 3
    repo.gc(grace=0)
    assert all(repo.storage.exists(shard_path(p["digest"])) for p in parts)
    repo.rm("d", repo.manifest("d").version)  # latest: its own part goes, its parents' stay
    report = repo.gc(grace=0)
    assert parts[2]["digest"] in report.deleted
    assert not {p["digest"] for p in parts[:2]} & set(report.deleted)
    ds = repo.dataset("d")
    assert keys[0][0] in ds and keys[1][0] in ds and keys[2][0] not in ds
    repo.rm("d")
    report = repo.gc(grace=0)
    assert {p["digest"] for p in parts[:2]} <= set(report.deleted)


def test_verify_checks_every_part(repo: Repository, local_root: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    unsorted_with_appends(repo, 2)
    parts = repo.manifest("d").key_index_parts
    run = runner(capsys, ["--root", local_root])
    assert "all ok" in run("verify", "d").out
    middle = Path(local_root, shard_path(parts[1]["digest"]))
    data = bytearray(middle.read_bytes())
    data[len(data) // 2] ^= 0xFF
    middle.write_bytes(bytes(data))
    Path(local_root, shard_path(parts[2]["digest"])).unlink()
    bad = {b["digest"]: b["problem"] for b in run("verify", "d", "--json", rc=1).json["bad"]}
    assert bad[parts[2]["digest"]] == "missing"
    assert bad[parts[1]["digest"]].startswith("bytes hash to")


def test_diff_does_not_count_parts_as_shards(repo: Repository, local_root: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    keys = unsorted_with_appends(repo, 2)
    old, new = (v.version for v in sorted(repo.versions("d"), key=lambda v: v.num_rows)[1:])
    d = runner(capsys, ["--root", local_root])("diff", f"d@{old}", f"d@{new}", "--json").json
    assert d["shards_shared"] == len(repo.manifest("d", old).shards)
    assert d["added"] == sorted(keys[2]) and d["removed"] == []


def test_duplicate_keys_in_any_part_are_refused(repo: Repository) -> None:
    keys = unsorted_with_appends(repo, 2)
    before = repo.manifest("d").version
    for k in (keys[0][3], keys[1][5], keys[2][0]):
        with pytest.raises(SchemaError, match=rf"already stored in its latest version.*{k}"):
            repo.append("d", table(["zz-new", k]), progress=False)
    with pytest.raises(SchemaError, match="duplicate keys in one version"):
        repo.append("d", table(["zz-1", "zz-1"]), progress=False)
    assert repo.manifest("d").version == before


# Version ids made by dload_arrow before key index parts (pyarrow 26.0.1 writes these bytes):
# a commit or an append that needs no more than one part must still produce them.
_BEFORE = {
    "unsorted_commit": "ff102fec3fad4edf2724552dfd366b4fb32291f94d55d1be4bac1a638f4f538b",
    "sorted_commit": "133f0eb5c924353f2b99016b251c12f6618ee0672a18955c0eb1a4c68291defb",
    "sorted_append": "372ae60172c9ca6d3221762276617a4a5b7420ace557e094cd1e2905b0648073",
    "unsorting_append": "d688ba658c87824b20517a650adfbc73298769736ee0826c701c4dbd5240acd1",
}


def test_manifests_without_parts_keep_their_bytes(repo: Repository) -> None:
    got = {"unsorted_commit": repo.commit("u", table(shuffled(500)), **SMALL)}
    s = [f"k{i:05d}" for i in range(500)]
    got["sorted_commit"] = repo.commit("s", table(s), **SMALL)
    got["sorted_append"] = repo.append("s", table([f"m{i:05d}" for i in range(50)], 500),
                                       progress=False)
    got["unsorting_append"] = repo.append("s", table(shuffled(50, "a")), progress=False)
    for what in ("unsorted_commit", "unsorting_append"):  # one index over every row
        m = got[what].manifest
        (part,) = m.key_index_parts
        old_json = json.dumps({**m.info, "format": 1, "key_index": {
            k: part[k] for k in ("digest", "bytes", "rows", "footer_offset", "rg_rows",
                                 "rg_offsets", "rg_bytes", "rg_key_min", "rg_key_max")}},
                              sort_keys=True, separators=(",", ":"))
        assert m.table.schema.metadata[b"dload"] == old_json.encode()
    if pa.__version__ != "26.0.1":
        pytest.skip(f"the ids were computed with pyarrow 26.0.1 (this is {pa.__version__})")
    assert {k: v.version for k, v in got.items()} == _BEFORE
    # such a manifest reads back, and an append onto it starts parts
    assert repo.dataset("u").get("k00042")["x"] == shuffled(500).index("k00042")
    m = repo.append("u", table(["zz"], 500), progress=False).manifest
    assert m.key_index_parts[0] == got["unsorted_commit"].manifest.key_index


def _hostile(m: Manifest, **info: Any) -> bytes:
    t = m.table.replace_schema_metadata({b"dload": json.dumps({**m.info, **info}).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def test_hostile_parts_are_integrity_errors(repo: Repository) -> None:
    unsorted_with_appends(repo, 2)
    m = repo.manifest("d")
    parts = m.key_index_parts
    assert Manifest.from_bytes(m.to_bytes(), m.version).key_index_parts == parts
    cases = {
        "one part in a list": {"key_index": parts[:1]},
        "not a list": {"key_index": {"parts": parts}},
        "not an object": {"format": 1},  # a list where format 1 wants one object
        "entries": {"key_index": [parts[0], "x"]},
        "rows short": {"key_index": parts[:2]},
        "rows": {"key_index": [parts[0], dict(parts[1], rows=-1), parts[2]]},
        "bytes": {"key_index": [parts[0], dict(parts[1], bytes="9"), parts[2]]},
        "layout": {"key_index": [parts[0], dict(parts[1], rg_key_min=None), parts[2]]},
        "lengths": {"key_index": [parts[0], dict(parts[1], rg_offsets=[0, 1, 2]), parts[2]]},
        "no index": {"key_index": None},
        "newer": {"format": 4},
    }
    for what, info in cases.items():
        with pytest.raises(IntegrityError) as e:
            Manifest.from_bytes(_hostile(m, **info))
        assert "key index" in str(e.value) or "upgrade" in str(e.value), what
    with pytest.raises(InvalidNameError, match="key index"):
        Manifest.from_bytes(_hostile(m, key_index=[parts[0], dict(parts[1], digest="../x")]))
    with pytest.raises(IntegrityError, match="upgrade"):
        Manifest.from_bytes(_hostile(m, format=4))
    with pytest.raises(IntegrityError, match="as format 3 requires"):  # named as itself
        Manifest.from_bytes(_hostile(m, format=3, key_index=parts[:1]))
    assert Manifest.from_bytes(_hostile(m, format=3)).key_index_parts == parts


def test_an_append_rebased_onto_a_newer_latest_writes_its_part_there(repo: Repository) -> None:
    from dload_arrow.read.random_access import stored_keys
    from dload_arrow.store.commit import commit_samples

    keys = unsorted_with_appends(repo, 0)
    stale = repo.manifest("d")
    keys.append(shuffled(20, prefix="a-"))
    repo.append("d", table(keys[-1], 500), progress=False)  # lands while the next one runs

    def late(rows: list[str], start: int) -> Manifest:
        return commit_samples(
            repo.storage, "d", table(rows, start), parent=stale, progress=False,
            read_keys=lambda m, shards: stored_keys(repo.storage, m, shards),
            rebase=lambda: repo.manifest("d"), protected=frozenset(stale.digests()),
            protected_by=stale.version).manifest

    with pytest.raises(ConflictError, match="collide"):
        late([keys[-1][3], "b-new"], 500)
    keys.append(shuffled(20, prefix="b-"))
    m = late(keys[-1], 500)
    assert m.parents[0]["version"] != stale.version and m.num_rows == 540
    parts = m.key_index_parts
    assert [p["rows"] for p in parts] == [500, 20, 20]
    assert index_table(repo, parts[2]).column("row").to_pylist() == [
        520 + keys[-1].index(k) for k in sorted(keys[-1])]
    ds = repo.dataset("d")
    every = [k for ks in keys for k in ks]
    assert ds.take(every[::37]).column("__key__").to_pylist() == every[::37]
