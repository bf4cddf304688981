"""An append reads no stored key unless it generates keys (QA cliffs56).

The first generated row-number key of an append comes after every stored row-number key;
finding those read the key column of every shard whose keys could be row numbers (keys
starting with a digit: ``00001234``, ``2024-01-01T...``), on every append, even when the new
rows brought their own keys: 3 ranged GETs a shard on S3. It is searched only when needed now.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from s3server import S3Server

from dload_arrow import Repository


def _stored(repo: Repository, shards: int) -> None:
    n = shards * 20
    rng = np.random.default_rng(0)
    repo.commit("s", pa.table({"__key__": [f"{i:08d}" for i in range(n)], "x": np.arange(n),
                               "b": [rng.bytes(100) for _ in range(n)]}),
                shard_size="3KiB", row_group_size="3KiB", progress=False)
    assert len(repo.manifest("s").shards) >= shards // 3


def test_an_append_with_its_own_keys_reads_no_stored_key(s3_repo: Repository,
                                                         s3_server: S3Server) -> None:
    _stored(s3_repo, 12)
    s3_server.clear()
    s3_repo.append("s", [(f"z{i}", {"x": i, "b": b"y"}) for i in range(5)], progress=False)
    assert s3_server.count("GET", "/shards/") == 0
    s3_repo.append("s", pa.table({"__key__": ["z9"], "x": [9], "b": [b"y"]}), progress=False)
    assert s3_server.count("GET", "/shards/") == 0


def test_generated_keys_still_come_after_the_stored_ones(s3_repo: Repository,
                                                         s3_server: S3Server) -> None:
    s3_repo.commit("g", [{"x": 1}, {"x": 2}], progress=False)  # keys 000000000000, ...01
    s3_repo.append("g", [("000000000007", {"x": 7})], progress=False)
    s3_server.clear()
    s3_repo.append("g", [{"x": 8}, {"x": 9}], progress=False)  # generated: after ...07
    s3_repo.append("g", pa.table({"x": [10]}), progress=False)
    keys = s3_repo.dataset("g").to_arrow().column("__key__").to_pylist()
    assert keys[-3:] == ["000000000008", "000000000009", "000000000010"]
