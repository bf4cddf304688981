"""QA hostile65, a root written by someone not trusted: `dload verify --delete-bad` on S3
hashed only the manifest's byte count of a shard, and deleted an intact shard another dataset
used (a manifest listing it one byte short); a FIFO or a link to /dev/zero where an object
should be hung commands or filled memory; JSON nested 100,000 deep or holding 1e999 in a ref,
log entry or manifest was "internal error", one bad log entry failing every SQL query; a
.DS_Store in refs/ failed info and rm; a stray manifests/zz.arrow stopped gc and versions."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def _evil_copy(repo: dl.Repository, good: str) -> tuple[str, bytes]:
    """A manifest of dataset 'evil' listing ``good``'s shard one byte short."""
    m = repo.dataset(good).manifest
    t = m.table
    info = dict(json.loads(t.schema.metadata[b"dload"]), name="evil")
    i = t.schema.get_field_index("bytes")
    t = t.set_column(i, t.schema.field(i), pa.array([t.column(i)[0].as_py() - 1],
                                                    t.schema.field(i).type))
    t = t.replace_schema_metadata({b"dload": json.dumps(info, sort_keys=True).encode()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    data = sink.getvalue().to_pybytes()
    return hashlib.sha256(data).hexdigest(), data


def test_verify_never_deletes_a_shard_whose_bytes_hash_to_its_name(
        s3_root: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = dl.Repository.open(s3_root, cache_dir=str(tmp_path / "c"))
    repo.commit("good", [(f"k{i:04d}", {"x": i}) for i in range(50)])
    vid, data = _evil_copy(repo, "good")
    repo.storage.write(f"datasets/evil/manifests/{vid}.arrow", data)
    repo.storage.write("datasets/evil/refs/latest", json.dumps({"version": vid, "seq": 1})
                       .encode())
    run: RunFn = runner(capsys, ["--root", s3_root, "--cache-dir", str(tmp_path / "c2")])
    err = run("verify", "evil", "--delete-bad", rc=1).err
    assert "the manifest of evil@" in err and "is wrong" in err and "kept" in err
    assert run("verify", "good").out.strip().endswith("all ok")
    assert dl.Repository.open(s3_root, cache_dir=str(tmp_path / "c3")).dataset(
        "good").num_rows == 50
    with pytest.raises(dl.IntegrityError, match=r"the manifest of dataset evil.* is wrong"):
        list(dl.Repository.open(s3_root, cache_dir=str(tmp_path / "c4")).dataset(
            "evil").batches())


def test_a_fifo_or_a_device_in_a_local_root_is_refused(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("a", [("k", {"x": 1})])
    ref = Path(local_root, "datasets/a/refs/latest")
    ref.unlink()
    os.mkfifo(ref)
    with pytest.raises(dl.StorageError, match="is not a regular file"):
        dl.Repository.open(local_root).dataset("a")
    ref.unlink()
    ref.symlink_to("/dev/zero")
    with pytest.raises(dl.StorageError, match="is not a regular file"):
        dl.Repository.open(local_root).dataset("a")


def test_a_shard_that_is_a_fifo_is_refused(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("a", [("k", {"x": 1})])
    (shard,) = Path(local_root, "shards").rglob("*.parquet")
    shard.unlink()
    os.mkfifo(shard)
    ds = dl.Repository.open(local_root).dataset("a")
    for read in (lambda: list(ds.batches()), lambda: ds[0],
                 lambda: repo.sql("SELECT count(*) FROM samples('a')")):
        with pytest.raises(dl.IntegrityError, match="no regular file"):
            read()


@pytest.mark.parametrize("bad", ["1e999", "[" * 100_000 + "]" * 100_000, "-1e12"])
def test_json_past_its_ranges_in_refs_and_log_entries(local_root: str, bad: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("a", [("k", {"x": 1})])
    repo.commit("b", [("k", {"y": 2})])
    log = Path(local_root, "datasets/a/log/latest")
    first = json.loads((log / "000000000001.json").read_text())
    text = json.dumps({**first, "seq": 2}).replace('"time": ', f'"time": {bad}, "t0": ')
    (log / "000000000002.json").write_text(text)
    with pytest.warns(UserWarning, match="log entry .* is malformed"):
        assert repo.sql("SELECT count(*) AS n FROM samples('b')").column("n")[0].as_py() == 1
    with pytest.warns(UserWarning, match="malformed"):
        assert len(dl.Repository.open(local_root).lineage("a").to_dict()["moves"]) >= 1
    ref = Path(local_root, "datasets/a/refs/latest")
    ref.write_text(json.dumps({**json.loads(ref.read_text()), "seq": 0}).replace(
        '"seq": 0', f'"seq": {bad}'))
    with pytest.raises(dl.IntegrityError, match="is not a valid ref"):
        dl.Repository.open(local_root).dataset("a")


def test_stray_files_beside_refs_and_manifests(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("a", [("k", {"x": 1})])
    Path(local_root, "datasets/a/refs/.DS_Store").write_bytes(b"\0\0\0\1Bud1")
    Path(local_root, "datasets/a/manifests/zz.arrow").write_bytes(b"not ours")
    fresh = dl.Repository.open(local_root)
    assert list(fresh.refs("a")) == ["latest"] and len(fresh.versions("a")) == 1
    assert fresh.gc(dry_run=True).deleted == []
    fresh.rm("a")
    assert fresh.datasets() == []
