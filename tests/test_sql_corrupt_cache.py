"""A cached shard damaged on the local disk after it was verified (same size, same mark: it
is trusted without hashing) fails a SQL query with DuckDB's bare "Out of buffer". The query
now checks the copies it read, deletes the bad one and says so; run again, it is fetched
anew from the root and the query answers."""

from __future__ import annotations

import os

import pytest

from dload_arrow import Repository
from dload_arrow.errors import IntegrityError, SqlError


def _spoil_keeping_mtime(path: str) -> None:
    st = os.stat(path)
    with open(path, "r+b") as f:  # 200 bytes in the middle: the values' pages
        f.seek(st.st_size // 2)
        data = f.read(200)
        f.seek(st.st_size // 2)
        f.write(bytes(b ^ 0xFF for b in data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_damaged_cached_shard_is_named_deleted_and_fetched_again(memory_root: str,
                                                                  cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    rows = [(f"k{i:04d}", {"s": f"value number {i} " * (1 + i % 7)}) for i in range(2000)]
    repo.commit("d", rows, progress=False)
    query = "select count(*) as n, sum(length(s)) as total from samples('d')"
    want = repo.sql(query).to_pylist()
    shard = repo.manifest("d").shards[0]
    cache = repo.read_context.cache()
    assert cache.is_cached(shard.digest, shard.bytes)
    _spoil_keeping_mtime(cache.shard_file(shard.digest))
    with pytest.raises(SqlError, match="nosuchcol"):  # the query's own mistake: no hashing
        repo.sql("select nosuchcol from samples('d')")
    assert os.path.exists(cache.shard_file(shard.digest))
    with pytest.raises(IntegrityError, match=rf"{shard.digest[:12]} did not match its digest"
                                             r".* run the query again"):
        repo.sql(query)
    assert not os.path.exists(cache.shard_file(shard.digest))
    assert repo.sql(query).to_pylist() == want
