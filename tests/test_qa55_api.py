"""The public API given what a user plausibly passes (QA api55).

- one str where a list of names goes (``text_columns="zip"``, ``store_dirs="/cache"``) was
  taken as its characters: leading zeros lost, dload's own folder ingested;
- numpy integers were refused as shard sizes and prefetch counts "not above 0", and a float
  cache budget of 1.5 became 1 byte;
- ``shuffle("64")`` (a count read from the environment) was 64 bytes, silently;
- ``open_source(kind="tar")`` said "a tar, not ... an archive"; a bad ``split=`` passed until
  the first read; the messages for text weights, an Arrow expression given to ``where()``,
  an item that is no dict and a bytes key column now say what to pass.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl
from dload_arrow import ConfigError, PredicateError, Repository, SchemaError
from dload_arrow.ingest import open_source, open_table


def test_one_text_column_given_as_a_str_is_one_column(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("zip,n\n007,1\n010,2\n")
    for given in ("zip", ["zip"], ("zip",)):
        assert open_table(csv, text_columns=given).read_all().column("zip").to_pylist() == [
            "007", "010"], given
    with pytest.raises(TypeError, match="column names are str, got a bytes"):
        open_table(csv, text_columns=[b"zip"])  # type: ignore[list-item]


def test_one_store_dir_given_as_a_str_is_left_out(tmp_path: Path) -> None:
    base = tmp_path / "data"
    (base / "cache").mkdir(parents=True)
    (base / "a.txt").write_text("a")
    (base / "cache" / "junk.txt").write_text("shard bytes")
    for given in (str(base / "cache"), base / "cache", [str(base / "cache")]):
        assert [s["__key__"] for s in open_source(base, store_dirs=given)] == ["a"], given
    with pytest.raises(TypeError, match="store_dirs= takes folders"):
        open_source(base, store_dirs=5)  # type: ignore[arg-type]


def test_numpy_sizes_and_counts_are_taken_and_fractions_of_bytes_refused(
        repo: Repository, tmp_path: Path) -> None:
    table = pa.table({"id": ["a", "b"], "x": [1.0, 2.0]})
    v = repo.commit("t", table, key="id", shard_size=np.int64(64 << 20),
                    row_group_size=np.int64(1 << 20), progress=False)
    assert v.num_rows == 2
    with pytest.raises(ConfigError, match="shard_size must be a size above 0"):
        repo.commit("t", table, key="id", shard_size=np.int64(0), progress=False)
    budget = Repository.open(tmp_path / "r2", cache_budget=np.int64(10**9))
    assert budget.cache_status().budget_bytes == 10**9
    with pytest.raises(ConfigError, match=r"1\.5 is a fraction of a byte; give whole bytes "
                                          r"or text with a unit such as '1\.5GB'"):
        Repository.open(tmp_path / "r3", cache_budget=1.5)  # type: ignore[arg-type]


def test_torch_arguments_take_numpy_scalars(repo: Repository) -> None:
    pytest.importorskip("torch")
    from dload_arrow.torch import StatefulLoader, as_iterable_dataset, to_device

    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(6)], progress=False)
    pipe = repo.dataset("d").batch(2)
    got = to_device(StatefulLoader(as_iterable_dataset(pipe, to_tensors=np.bool_(True))), "cpu",
                    prefetch=np.int64(2))  # type: ignore[arg-type]
    assert [b["x"].tolist() for b in got] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ConfigError, match="prefetch=0: need an int >= 1"):
        to_device(StatefulLoader(as_iterable_dataset(pipe)), "cpu", prefetch=0)


def test_a_unitless_text_buffer_asks_rows_or_bytes(repo: Repository) -> None:
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(10)], progress=False)
    ds = repo.dataset("d")
    with pytest.raises(ConfigError, match=r"shuffle buffer '64' has no unit: pass 64 \(an int\) "
                                          r"for rows, or a size such as '64MB' for bytes"):
        ds.shuffle("64", seed=0)
    assert len(list(ds.shuffle("64KB", seed=0))) == 10 and len(list(ds.shuffle(64))) == 10


def test_source_kinds_and_splits_are_checked_when_given(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    with pytest.raises(ConfigError, match=r"open_source\(kind='tar'\): kind is 'auto' \(detect\), "
                                          r"'files' \(a directory\) or 'archive'"):
        open_source(tmp_path, kind="tar")
    with pytest.raises(ConfigError, match="split must be 'first' or 'last', not 'middle'"):
        open_source(tmp_path, split="middle")  # refused at once, not at the first read


def test_messages_say_what_to_pass(repo: Repository) -> None:
    import pyarrow.compute as pc

    repo.commit("d", [(f"k{i}", {"label": i}) for i in range(4)], progress=False)
    ds = repo.dataset("d")
    with pytest.raises(ConfigError, match=r"weights '0.7,0.3' must be a sequence of 2 numbers, "
                                          r"one per input, not text: e.g. \[0.7, 0.3\]"):
        dl.mix([ds.pipeline(), ds.pipeline()], "0.7,0.3")  # type: ignore[arg-type]
    with pytest.raises(PredicateError, match="got Expression; pass a pyarrow expression to "
                                             r"filter\(expr\)"):
        ds.where(pc.field("label") == 1)  # type: ignore[arg-type]
    assert [r["label"] for r in ds.filter(pc.field("label") == 1)] == [1]
    with pytest.raises(TypeError, match=r"cannot turn the item 1 \(int\) into an Arrow row"):
        list(ds.map_batches(lambda b: [1]))
    with pytest.raises(SchemaError, match=r"key=b'id': give the key column's name as a str, "
                                          r"got bytes"):
        repo.commit("e", pa.table({"id": ["a"], "x": [1]}), key=b"id",  # type: ignore[arg-type]
                    progress=False)


def test_mypy_finds_a_misspelled_top_level_name(tmp_path: Path) -> None:
    script = tmp_path / "typo.py"
    script.write_text("import dload_arrow as dl\n\nrepo = dl.Repositroy.open('/tmp/x')\n"
                      "ok = dl.Repository.open('/tmp/x')\n")
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", str(script)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert 'Module has no attribute "Repositroy"' in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("error:") == 1, r.stdout


def test_archive_format_takes_a_path(tmp_path: Path) -> None:
    import tarfile

    from dload_arrow.ingest import archive_format

    with tarfile.open(tmp_path / "a.tar", "w") as t:
        t.add(tmp_path, arcname=".")
    assert archive_format(tmp_path / "a.tar") == archive_format(str(tmp_path / "a.tar")) == "tar"


def test_text_sizes_without_a_unit_are_whole_bytes(tmp_path: Path) -> None:
    """(review55) DLOAD_CACHE_BUDGET=1.5 was a 1-byte budget; inf was "a fraction"."""
    from dload_arrow.sizes import parse_size

    assert parse_size("4096") == 4096 and parse_size("1.5KB") == 1500
    with pytest.raises(ConfigError, match=r"'1\.5' is a fraction of a byte; give whole bytes "
                                          r"or a unit such as '1\.5GB'"):
        parse_size("1.5", "cache budget")
    with pytest.raises(ConfigError, match="inf is not a size"):
        parse_size(float("inf"), "cache budget")
    with pytest.raises(ConfigError, match="is a fraction of a byte"):
        Repository.open(tmp_path / "r", cache_budget="1.5")


def test_start_workers_freezes_without_a_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """(review55) the full collection before the fork walked a forked rank's inherited heap
    (a segfault in the suite): start_workers freezes only."""
    pytest.importorskip("torch")
    import gc

    from torch.utils.data import DataLoader

    from dload_arrow.torch.forking import start_workers

    collections: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(1) or 0)
    frozen: list[int] = []
    loader = DataLoader(list(range(4)), num_workers=1,
                        worker_init_fn=lambda _: None, multiprocessing_context="fork")
    real_iter = DataLoader.__iter__

    def spying_iter(self: Any) -> Any:
        frozen.append(gc.get_freeze_count())
        return real_iter(self)

    monkeypatch.setattr(DataLoader, "__iter__", spying_iter)
    it = start_workers(loader)
    assert [int(x) for x in it] == [0, 1, 2, 3]
    assert collections == [] and frozen and frozen[0] > 0 and gc.get_freeze_count() == 0
