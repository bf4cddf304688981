from dload_arrow import Repository


def test_commit_twice_on_each_backend_gives_same_id_and_no_uploads(any_repo: Repository) -> None:
    samples = [(f"k{i}", {"x": i, "b": bytes([i % 256]) * 10}) for i in range(300)]
    v1 = any_repo.commit("d", samples, shard_size=2000, row_group_size=500, progress=False)
    v2 = any_repo.commit("d", samples, shard_size=2000, row_group_size=500, progress=False)
    assert v1.version == v2.version
    assert v1.shards_uploaded == v1.shards_total > 1
    assert v2.shards_uploaded == 0 and v2.bytes_uploaded == 0
    assert any_repo.dataset("d").num_rows == 300
