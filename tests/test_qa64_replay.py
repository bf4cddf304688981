"""QA replay64: a replay buffer appending all day. Every rm read the whole ref log twice (it
grows by an object a move, never trimmed: 1 s an rm after 150 appends on S3), and an
appender's manifest cache counted a third of what it held (1 GB where it meant 256 MB)."""

from __future__ import annotations

import pyarrow as pa
from s3server import S3Server

import dload_arrow as dl
from dload_arrow.store.manifest_cache import _cost


def test_log_entries_read_once_per_process(s3_root: str, s3_server: S3Server,
                                           cache_dir: str) -> None:
    repo = dl.Repository.open(s3_root, cache_dir=cache_dir)
    repo.commit("rb", pa.table({"__key__": ["k0"], "v": [0]}))
    for i in range(1, 12):
        repo.append("rb", pa.table({"__key__": [f"k{i}"], "v": [i]}))
    fresh = dl.Repository.open(s3_root, cache_dir=cache_dir)
    ids = [v.version for v in fresh.versions("rb")]
    s3_server.clear()
    fresh.rm("rb", ids[0])  # an old version: its fallbacks read from the log already seen
    assert len(s3_server.gets("/log/")) <= 2  # (the rm's own entries at most), not 2 x 12
    s3_server.clear()
    assert [v.version for v in fresh.versions("rb")] == ids[1:]
    assert len(s3_server.gets("/log/")) <= 2
    history = fresh.log("rb")
    assert len(history) >= 12 and history == dl.Repository.open(
        s3_root, cache_dir=cache_dir).log("rb")  # (a new process reads the same)


def test_the_manifest_cache_counts_its_shard_entries(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("rb", pa.table({"__key__": ["k0"], "v": [0]}))
    for i in range(1, 60):
        repo.append("rb", pa.table({"__key__": [f"k{i}"], "v": [i]}))
    m = repo.manifest("rb")
    assert len(m.shards) == 60
    assert _cost(m) >= m.table.nbytes + 60 * 700  # a parsed shard entry: ~750 bytes


def test_a_local_object_has_one_tag_listed_or_stat_ed(local_root: str) -> None:
    """QA review64g: a local root's info() left the tag empty while list() filled it."""
    repo = dl.Repository.open(local_root)
    repo.commit("t", pa.table({"__key__": ["a"], "v": [1]}))
    (listed,) = [o for o in repo.storage.list("datasets/t/manifests/")]
    assert listed.tag and repo.storage.info(listed.path) == listed
