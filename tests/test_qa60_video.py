"""QA video60: large samples (scans, clips): windows sized by decoded bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.errors import InfeasiblePlanError
from dload_arrow.pipeline.window_size import DEFAULT_BUFFER, DEFAULT_WINDOW_BYTES


@pytest.fixture
def scans(tmp_path: Path) -> dl.Dataset:
    """40 rows of 256 KiB that compress to almost nothing."""
    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    pattern = bytes(range(256)) * 1024
    repo.commit("scans", ((f"s{i:03d}", {"raw": pattern[i:] + pattern[:i], "id": i})
                          for i in range(40)), progress=False)
    return repo.dataset("scans")


def test_a_byte_buffer_counts_decoded_bytes(scans: dl.Dataset) -> None:
    """'8MB' of 4 MiB scans stored in 1.2 KB became a window of 6,552 scans (25 GiB)."""
    assert scans.manifest.num_bytes / scans.num_rows < 20_000  # stored: compressed
    pipe = scans.shuffle("2MB", seed=0)
    assert 7 <= pipe.buffer <= 9  # 2 MB of 256 KiB rows
    assert sorted(r["id"] for r in pipe) == list(range(40))
    small = scans.pipeline(columns=["id"]).shuffle("2MB", seed=0)  # the ids only: tiny rows
    assert small.buffer > 1000


def test_the_default_window_is_capped_by_decoded_bytes_and_memory(
        scans: dl.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """16,384 rows of 5 MB clips were 80 GB; a windowed shuffle had no memory check."""
    rows = scans.shuffle(seed=0).buffer
    assert rows < DEFAULT_BUFFER and abs(rows * 256 * 1024 - DEFAULT_WINDOW_BYTES) < 2**20
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "20MB")  # 3 windows of the 40 rows: 30 MB
    with pytest.warns(UserWarning, match=r"shuffle\(\) of 'scans'.*holds about 3 windows"):
        assert scans.shuffle(seed=0).buffer == rows  # never made smaller: the order would
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "5MB")  # depend on the machine
    with pytest.raises(InfeasiblePlanError, match=r"shuffle\(\) of 'scans'"):
        scans.shuffle(seed=0)  # one window alone does not fit
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "1MB")
    with pytest.raises(InfeasiblePlanError, match=r"shuffle\('2MB'\) of 'scans': a window of "
                       r"\d+ rows is about 2\.\d MB decoded.*holds about 3 windows"):
        scans.shuffle("2MB", seed=0)
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "8MB")
    assert sorted(r["id"] for r in scans.shuffle("2MB", seed=0)) == list(range(40))


def test_a_lookup_of_a_small_column_beside_blobs_fetches_its_chunks_only(
        s3_root: str, cache_dir: str, s3_server) -> None:  # type: ignore[no-untyped-def]
    """QA video60: take(keys, columns=['meta']) on S3 read the whole row group (4.2 MB)."""
    import os

    repo = dl.Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    repo.commit("clips", [(f"c{i}", {"raw": os.urandom(1_500_000), "meta": f'{{"i": {i}}}'})
                          for i in range(4)], row_group_size="8MB", progress=False)
    ds = repo.dataset("clips")
    ds.get("c0", columns=["meta"])  # the footer, cached from here on
    s3_server.clear()
    t = ds.take(["c1", "c2"], columns=["meta"])
    assert t.column("meta").to_pylist() == ['{"i": 1}', '{"i": 2}']
    assert 0 < s3_server.bytes_sent("shards/") < 100_000  # not the 6 MB row group
    s3_server.clear()
    assert len(ds.get("c3")["raw"]) == 1_500_000  # every column: one GET of the row group
    assert s3_server.count("GET", "shards/", ranged=True) == 1


def test_review60e_window_bytes_from_several_shards_and_dotted_columns(tmp_path: Path) -> None:
    """The first shard alone sized windows (small rows first, 256 KiB rows appended: 28,459
    rows for '4MB'); a projected column named with a dot counted as no bytes."""
    import os

    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    repo.commit("d", [(f"a{i:03d}", {"seg.png": b"x", "n": i}) for i in range(50)],
                progress=False)
    repo.append("d", [(f"b{i:03d}", {"seg.png": os.urandom(256 * 1024), "n": i})
                      for i in range(30)], progress=False)
    ds = repo.dataset("d")
    assert len(ds.manifest.shards) >= 2
    assert ds.shuffle("4MB", seed=0).buffer < 60  # not thousands
    assert ds.pipeline(columns=["seg.png"]).shuffle("4MB", seed=0).buffer < 60


def test_review60e_a_footer_that_cannot_be_read_is_an_error_not_another_window(
        s3_root: str, cache_dir: str, s3_server) -> None:  # type: ignore[no-untyped-def]
    repo = dl.Repository.open(s3_root, cache_dir=cache_dir)
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(20)], progress=False)
    ds = repo.dataset("d")
    s3_server.fail("GET", "shards/", 403, "AccessDenied", times=50)
    try:
        with pytest.raises(dl.DloadError):
            ds.shuffle("1MB", seed=0)
    finally:
        s3_server.failing.clear()
    assert ds.shuffle("1MB", seed=0).buffer > 0


def test_review60e_many_small_columns_beside_a_blob_take_few_gets(
        s3_root: str, cache_dir: str, s3_server) -> None:  # type: ignore[no-untyped-def]
    import os

    repo = dl.Repository.open(s3_root, cache_dir=cache_dir, cache_budget="unlimited")
    rows = [(f"k{i}", {"raw": os.urandom(1_200_000), **{f"c{j:02d}": j for j in range(20)}})
            for i in range(3)]
    repo.commit("d", rows, row_group_size="8MB", progress=False)
    ds = repo.dataset("d")
    ds.get("k0", columns=["c00"])  # the footer, cached from here on
    s3_server.clear()
    got = ds.take(["k1", "k2"], columns=[f"c{j:02d}" for j in range(20)])
    assert got.column("c19").to_pylist() == [19, 19]
    assert s3_server.count("GET", "shards/") <= 4 and s3_server.bytes_sent("shards/") < 500_000


def test_dist60_a_small_dataset_is_priced_by_its_rows_and_shard_shuffle_is_capped(
        scans: dl.Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """40 rows of 256 KiB (10 MB) were priced as a 1,024-row window; shard().shuffle() used
    16,384 items whatever their size."""
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "100MB")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scans.shuffle(seed=0).buffer > 40  # the window holds the 40 rows there are
    pipe = scans.pipeline().shard(0, 2).shuffle(seed=0)
    assert pipe.buffer < DEFAULT_BUFFER
    assert len(list(pipe)) == 20


def test_review60f_a_list_view_column_beside_a_projection(tmp_path: Path) -> None:
    """A list_view of structs counted as one leaf: a projected shuffle crashed (IndexError)."""
    import pyarrow as pa

    repo = dl.Repository.open(tmp_path / "root", cache_dir=tmp_path / "c")
    lv = pa.array([[{"a": i, "b": "x"}] for i in range(30)],
                  pa.list_view(pa.struct([("a", pa.int64()), ("b", pa.string())])))
    repo.commit("d", pa.table({"lv": lv, "n": list(range(30))}), progress=False)
    pipe = repo.dataset("d").pipeline(columns=["n"]).shuffle("1MB", seed=0)
    assert sorted(r["n"] for r in pipe) == list(range(30))
