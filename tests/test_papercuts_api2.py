"""Third QA pass (the core API): budgets shared by mixed sources, collate, derive of a view,
refused meta, and argument checks that named the wrong thing or none."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, Repository, SchemaError


def _blobs(name: str, n: int = 3000) -> Any:
    return ((f"{name}{i:05d}", {"i": i, "blob": np.random.default_rng(i).bytes(300)})
            for i in range(n))


@pytest.fixture
def two(memory_root: str, cache_dir: str) -> tuple[Repository, int]:
    big = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    for name in "ab":
        big.commit(name, _blobs(name), shard_size="60KB", row_group_size="15KB", progress=False)
    shard = max(s.bytes for n in "ab" for s in big.manifest(n).shards)
    assert len(big.manifest("a").shards) >= 10
    return big, shard


@pytest.mark.parametrize("budget_shards", [4, 8])
def test_sources_read_at_once_share_the_budget(two: tuple[Repository, int], memory_root: str,
                                               tmp_path: Any, budget_shards: int) -> None:
    _, shard = two
    repo = Repository.open(memory_root, cache_dir=str(tmp_path / f"c{budget_shards}"),
                           cache_budget=str(budget_shards * shard))
    a, b = repo.dataset("a"), repo.dataset("b")
    mixed = dl.mix([a.shuffle(500, seed=1), b.pipeline()], [0.5, 0.5], seed=0, stop="all")
    for pipe in (mixed, dl.concat([a.pipeline(), b.pipeline()]),
                 dl.zip_with([a.pipeline(), b.pipeline()])):
        report = pipe.check()
        assert report.feasible, report.message
        assert report.resident_bytes <= budget_shards * shard
    keys = [s["__key__"] for s in mixed]
    assert len(keys) == len(set(keys)) == 6000
    assert sum(1 for _ in dl.concat([a.pipeline(), b.pipeline()])) == 6000
    assert repo.read_context.cache().used_bytes() <= budget_shards * shard


def test_too_small_a_budget_for_two_sources_is_still_refused(
        two: tuple[Repository, int], memory_root: str, tmp_path: Any) -> None:
    _, shard = two
    repo = Repository.open(memory_root, cache_dir=str(tmp_path / "c"),
                           cache_budget=str(int(1.5 * shard)))
    a, b = repo.dataset("a"), repo.dataset("b")
    assert a.pipeline().check().feasible  # one source: one shard at a time fits
    report = dl.mix([a, b], seed=0).check()
    assert not report.feasible and "lower prefetch" not in report.message


def test_a_users_collate_gets_the_items_as_dicts(repo: Repository) -> None:
    from dload_arrow.torch import collate

    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    ds = repo.dataset("a")
    seen: list[str] = []

    def xs(items: Any) -> list[int]:
        seen.append(type(items).__name__)
        return [it["x"] for it in items]

    assert next(iter(ds.pipeline().batch(3, collate=xs))) == [0, 1, 2]
    assert next(iter(ds.batch(3, collate=xs))) == [0, 1, 2]
    assert sorted(next(iter(ds.shuffle(5, seed=0).batch(10, collate=xs)))) == list(range(10))
    assert set(seen) == {"list"}
    out = next(iter(ds.pipeline().batch(4, collate=collate)))
    assert out["x"].tolist() == [0, 1, 2, 3] and out["__key__"] == ["k0", "k1", "k2", "k3"]
    with pytest.raises(TypeError, match="collate must be a function"):
        ds.pipeline().batch(3, collate="stack")


def test_derive_takes_a_dataset_or_a_where_view(repo: Repository) -> None:
    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(20)], progress=False)
    ds = repo.dataset("a")
    assert repo.derive("small", ds.where("x < 5")).num_rows == 5
    assert repo.derive("copy", ds).num_rows == 20
    with pytest.raises(TypeError, match="needs a Pipeline or a Dataset"):
        repo.derive("bad", [1, 2, 3])
    with pytest.raises(TypeError, match=r"derive\('bad'\) got unexpected keyword.*bogus"):
        repo.derive("bad", ds.pipeline(), bogus=1)


@pytest.mark.parametrize("meta", [[1, 2], "text", 5])
def test_meta_that_is_not_a_dict_is_refused_before_anything_is_stored(
        repo: Repository, meta: Any) -> None:
    with pytest.raises(ConfigError, match="meta must be a dict"):
        repo.commit("m", [("a", {"x": 1})], meta=meta, progress=False)
    assert repo.datasets() == []
    with pytest.raises(ConfigError, match="recipe must be text"):
        repo.commit("m", [("a", {"x": 1})], recipe=123, progress=False)  # type: ignore[arg-type]


def test_take_refuses_one_key_given_as_a_string(repo: Repository) -> None:
    repo.commit("a", [("abc", {"x": 1}), ("a", {"x": 2})], progress=False)
    ds = repo.dataset("a")
    with pytest.raises(TypeError, match=r"take\(\) wants a list.*get\('abc'\)"):
        ds.take("abc")  # type: ignore[arg-type]
    assert ds.take(["abc"]).column("x").to_pylist() == [1]


def test_pipeline_arguments_name_what_is_wrong(repo: Repository) -> None:
    repo.commit("a", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    ds = repo.dataset("a")
    with pytest.raises(TypeError, match="unbatch: an item is a dict but not a batch"):
        list(ds.pipeline().unbatch())
    with pytest.raises(TypeError, match="unbatch: an item is not a batch"):
        list(ds.pipeline().map(lambda s: s["x"]).unbatch())
    with pytest.raises(ValueError, match=r"weights \['a', 1\] must be 2"):
        dl.mix([ds, ds], weights=["a", 1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="takes no buffer"):
        ds.shuffle(10, seed=0, full=True)
    with pytest.raises(ValueError, match="batch size must be a positive int, got True"):
        ds.pipeline().batch(True)


def test_empty_appends_are_refused_like_empty_commits(repo: Repository) -> None:
    repo.commit("a", [("k", {"x": 1})], progress=False)
    with pytest.raises(SchemaError, match="nothing to append to 'a'"):
        repo.append("a", [], progress=False)
    assert len(repo.versions("a")) == 1


def test_names_and_durations_say_the_rule_they_break(repo: Repository) -> None:
    with pytest.raises(dl.InvalidNameError, match="starting with a letter or digit"):
        repo.commit("-x", [("k", {"x": 1})], progress=False)
    with pytest.raises(ConfigError, match="grace -5 must be a number of seconds >= 0"):
        repo.gc(grace=-5)


def test_a_config_file_value_of_the_wrong_type_is_refused(tmp_path: Any,
                                                         monkeypatch: Any) -> None:
    (tmp_path / "dload.toml").write_text("root = [1, 2]\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"root = \[1, 2\] must be text"):
        Repository.open()


def test_appending_a_table_with_fewer_columns_or_no_keys(repo: Repository) -> None:
    import pyarrow as pa

    repo.commit("t", pa.table({"x": [1, 2], "y": ["a", "b"]}), progress=False)
    v = repo.append("t", pa.table({"x": [3]}), progress=False)  # y is null in the new row
    rows = list(repo.dataset("t").samples())
    assert v.num_rows == 3 and [r["__key__"] for r in rows] == [
        "000000000000", "000000000001", "000000000002"]
    assert rows[2] == {"__key__": "000000000002", "x": 3, "y": None}
    with pytest.raises(SchemaError, match=r"column\(s\) \['z'\] that 't' does not have"):
        repo.append("t", pa.table({"x": [4], "z": [1.0]}), progress=False)
    with pytest.raises(SchemaError, match=r"'000000000000'.*cannot replace them"):
        repo.append("t", pa.table({"__key__": ["000000000000"], "x": [5]}), progress=False)


def test_unbatch_splits_what_a_collate_returned(repo: Repository) -> None:
    from dload_arrow.pipeline.sources import from_iterable

    assert list(from_iterable(range(10)).batch(4, collate=np.asarray).unbatch()) == list(
        range(10))


def test_an_appended_tables_key_column_must_exist(repo: Repository) -> None:
    import pyarrow as pa

    repo.commit("t", pa.table({"id": ["a"], "x": [1]}), key="id", progress=False)
    with pytest.raises(SchemaError, match="key column 'id' not found in the appended table"):
        repo.append("t", pa.table({"x": [2]}), key="id", progress=False)


def test_an_appended_key_column_that_the_dataset_stores_as_data_is_refused(
        repo: Repository) -> None:
    import pyarrow as pa

    repo.commit("d", pa.table({"id": ["a", "b"], "v": [1, 2]}), progress=False)  # row keys
    with pytest.raises(SchemaError, match="'v' of the appended table is a data column of 'd'"):
        repo.append("d", pa.table({"id": ["c"], "v": [3]}), key="v", progress=False)
    assert repo.dataset("d").num_rows == 2


def test_keyless_appends_that_collide_while_rebasing_are_refused(repo: Repository) -> None:
    import pyarrow as pa

    from dload_arrow import ConflictError

    repo.commit("t", pa.table({"x": [1, 2, 3]}), progress=False)
    other = Repository.open(repo.root if hasattr(repo, "root") else repo.storage.url)

    def batches() -> Any:
        yield pa.record_batch({"x": [10, 11]})
        other.append("t", pa.table({"x": [20, 21]}), progress=False)  # lands meanwhile
        yield pa.record_batch({"x": [12]})

    reader = pa.RecordBatchReader.from_batches(pa.schema([("x", pa.int64())]), batches())
    with pytest.raises(ConflictError, match="append it again"):
        repo.append("t", reader, progress=False)
    assert [s["x"] for s in repo.dataset("t").samples()] == [1, 2, 3, 20, 21]
