"""A cache dir is only ever a cache: never a root, never inside one, never someone's shards/.

A cache's layout (``shards/<aa>/<sha>.parquet``) is a root's layout, so eviction, trim and
``dload cache clear`` in a root would delete its committed shards (a QA finding: data loss).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow import ConfigError, Repository
from dload_arrow.read.cache import Cache

MARKER = "CACHEDIR.TAG"  # the cache directory tag every dload cache carries


def _commit(repo: Repository, name: str = "d", n: int = 400) -> None:
    samples = [(f"k{i:05d}", {"x": i, "blob": os.urandom(48)}) for i in range(n)]
    repo.commit(name, samples, shard_size=3000, row_group_size=800, progress=False)


def _files(path: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> RunFn:
    return runner(capsys)


def test_cache_clear_in_a_local_root_is_refused_and_deletes_nothing(
        local_root: str, cache_dir: str, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit(Repository.open(local_root, cache_dir=cache_dir))
    shards = _files(os.path.join(local_root, "shards"))
    assert shards
    monkeypatch.setenv("DLOAD_ROOT", local_root)
    r = run("cache", "clear", "--cache-dir", local_root, rc=1)
    assert local_root in r.err and "is the root" in r.err and "DLOAD_CACHE_DIR" in r.err
    assert _files(os.path.join(local_root, "shards")) == shards
    with pytest.raises(ConfigError, match="is the root"):  # refused when the root opens
        Repository.open(local_root, cache_dir=local_root)
    assert _files(os.path.join(local_root, "shards")) == shards
    assert sorted(os.listdir(local_root)) == [".locks", "datasets", "shards"]  # no litter


def test_a_cache_dir_in_a_roots_own_folders_is_refused_at_open(local_root: str) -> None:
    """The manifest cache wrote ``manifests/`` into the root, or a ``datasets/manifests``
    that reads as a dataset (QA repo 42); a folder of the user's own beside them is fine."""
    _commit(Repository.open(local_root, cache_dir=local_root + "-c"))
    for inner in ("datasets", "shards", "datasets/d"):
        with pytest.raises(ConfigError, match="inside the root"):
            Repository.open(local_root, cache_dir=os.path.join(local_root, inner))
    assert os.listdir(os.path.join(local_root, "datasets")) == ["d"]
    beside = Repository.open(local_root, cache_dir=os.path.join(local_root, ".cache"))
    assert sum(b.num_rows for b in beside.dataset("d").batches()) == 400  # read in place
    with pytest.raises(ConfigError, match="inside the root"):
        beside.cache_clear()  # clearing is refused anywhere in the root


def test_an_s3_reader_caching_in_a_local_roots_directory_evicts_nothing(
        s3_root: str, local_root: str, tmp_path: Path) -> None:
    _commit(Repository.open(local_root, cache_dir=str(tmp_path / "c1")))
    shards = _files(os.path.join(local_root, "shards"))
    writer = Repository.open(s3_root, cache_dir=str(tmp_path / "c2"), cache_budget="unlimited")
    _commit(writer, n=300)
    small = Repository.open(s3_root, cache_dir=local_root, cache_budget="16KB")
    with pytest.raises(ConfigError, match="holds datasets/"):
        sum(b.num_rows for b in small.dataset("d").batches())
    assert _files(os.path.join(local_root, "shards")) == shards
    with pytest.raises(ConfigError, match="holds datasets/"):
        Cache(local_root, 1)


def test_a_cache_dir_inside_a_local_root_is_refused(local_root: str) -> None:
    inner = os.path.join(local_root, "shards")
    _commit(Repository.open(local_root, cache_dir=local_root + "-c"))
    with pytest.raises(ConfigError, match="inside the root"):
        Repository.open(local_root, cache_dir=inner, cache_budget="1KB").cache_clear()
    assert _files(inner)  # the root's shards are all there


def test_a_directory_with_foreign_shards_is_not_taken_for_a_cache(tmp_path: Path) -> None:
    # Say a root whose first commit stopped after its shards were written (no datasets/ yet).
    d = tmp_path / "half-root"
    shard = d / "shards" / "ab" / ("ab" * 32 + ".parquet")
    shard.parent.mkdir(parents=True)
    shard.write_bytes(b"x" * 100)
    with pytest.raises(ConfigError, match=f"not a dload cache \\(no {MARKER}\\)"):
        Cache(str(d), 10).clear()
    assert shard.read_bytes() == b"x" * 100


def test_a_new_cache_is_marked_and_an_older_unmarked_cache_is_still_used(
        memory_root: str, cache_dir: str) -> None:
    repo = Repository.open(memory_root, cache_dir=cache_dir, cache_budget="unlimited")
    _commit(repo)
    repo.pull("d", progress=False)
    marker = Path(cache_dir) / MARKER
    assert marker.read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    # A cache from before the marker: shards/ next to cache.lock (taken by every admission).
    marker.unlink()
    assert os.path.exists(os.path.join(cache_dir, "cache.lock"))
    total = repo.manifest("d").num_bytes
    assert Cache(cache_dir, "unlimited").clear() >= total  # (the cached manifest too)
    assert not [f for _, _, fs in os.walk(os.path.join(cache_dir, "shards")) for f in fs]
    assert marker.exists()


def test_an_empty_or_unrelated_directory_becomes_a_cache(tmp_path: Path) -> None:
    d = tmp_path / "scratch"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    cache = Cache(str(d), "10MB")
    assert cache.clear() == 0
    assert (d / MARKER).exists() and (d / "notes.txt").read_text() == "mine"
