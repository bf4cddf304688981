"""QA review65c, a review of the latest fixes: a derive reading labels through a Dataset's
bound method (`get = ds.get`) kept its memo over a new version; a `cp -r` of a dataset's folder
into another's replaced its latest too, and the advice moved the whole folder out; a removal
record with an infinite time failed every SQL query; a large list view appended to a list
view; the shuffle hint offered a buffer that rounded up past what fits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import dload_arrow as dl


def test_a_derive_reading_through_a_bound_method(repo: dl.Repository) -> None:
    repo.commit("pool", [(f"k{i}", {"x": i}) for i in range(4)])
    repo.commit("labels", [(f"k{i}", {"label": 0}) for i in range(4)])

    def build() -> dl.Pipeline:
        get = repo.dataset("labels").get
        return repo.dataset("pool").map(lambda r: {**r, "label": get(r["__key__"])["label"]})

    first = repo.derive("train", build()).version
    repo.commit("labels", [(f"k{i}", {"label": 1}) for i in range(4)])
    assert repo.derive("train", build()).version != first
    assert repo.dataset("train").get("k0")["label"] == 1


def test_a_whole_folder_copied_into_another_datasets(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("p1", [("a", {"x": 1})])
    q = repo.commit("q", [("z", {"y": 1.5})]).version
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/q", dirs_exist_ok=True)
    with pytest.raises(dl.InvalidNameError, match=r"merged into the folder of dataset 'q'.*"
                       r"replaced 'q''s refs/latest too"):
        dl.Repository.open(local_root).versions("q")
    for f in Path(local_root, "datasets/p1/manifests").iterdir():  # the advice
        Path(local_root, "datasets/q/manifests", f.name).unlink()
    fresh = dl.Repository.open(local_root)
    with pytest.warns(UserWarning):
        assert fresh.commit("q", fresh.dataset("q", q)).version == q
    assert fresh.dataset("q").get("z")["y"] == 1.5


def test_a_removal_record_out_of_range_is_left_out(repo: dl.Repository, local_root: str) -> None:
    repo.commit("a", [("k", {"x": 1})])
    repo.commit("b", [("k", {"x": 2})])
    repo.rm("a")
    (record,) = Path(local_root, "datasets/a/removed").glob("*.json")
    record.write_text(json.dumps({**json.loads(record.read_text()), "time": 0}).replace(
        '"time": 0', '"time": 1e999'))
    fresh = dl.Repository.open(local_root)
    with pytest.warns(UserWarning, match="removal record .* is malformed: its time inf"):
        assert fresh.sql("SELECT count(*) AS n FROM samples('b')").column("n")[0].as_py() == 1


def test_a_large_list_view_appended_to_a_list_view(repo: dl.Repository) -> None:
    st = pa.struct([("s", pa.string())])
    repo.commit("lv", pa.table({"__key__": ["a"], "c": pa.array([[{"s": "a"}]], pa.list_view(st))}))
    repo.append("lv", pa.table({"__key__": ["d"], "c": pa.array([[{"s": "d"}]],
                                                               pa.large_list_view(st))}))
    assert [r["c"] for r in repo.dataset("lv").samples()] == [[{"s": "a"}], [{"s": "d"}]]


def test_the_shuffle_hint_is_whole_rows_that_fit(repo: dl.Repository,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import warnings

    repo.commit("big", [(f"v{i}", {"image": np.full(262_144, i, np.float32)}) for i in range(8)],
                row_group_size="1MB")
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "8MB")
    with pytest.raises(dl.InfeasiblePlanError, match=r"e\.g\. shuffle\((\d+)\)") as e:
        repo.dataset("big").shuffle("9MB", seed=0)
    rows = int(re.search(r"e\.g\. shuffle\((\d+)\)", str(e.value)).group(1))  # type: ignore[union-attr]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # following it warns no more
        repo.dataset("big").shuffle(rows, seed=0)


@pytest.mark.parametrize("kind", [pa.list_view, pa.large_list_view])
def test_a_list_view_appended_to_a_list_column(repo: dl.Repository, kind: type) -> None:
    """QA review65d: pyarrow's cast stored [[5, 6]] as [[]] (or crashed); a struct of string
    views inside failed as text that is not UTF-8."""
    repo.commit("d", pa.table({"__key__": ["a"], "v": pa.array([[0]], pa.list_(pa.int64()))}))
    repo.append("d", pa.table({"__key__": ["b"], "v": pa.array([[5, 6]], kind(pa.int64()))}))
    repo.append("d", pa.table({"__key__": ["c", "d", "e"], "v": pa.array(
        [[1, 2], None, [3]], kind(pa.int64()))}))
    assert [r["v"] for r in repo.dataset("d").samples()] == [[0], [5, 6], [1, 2], None, [3]]
    st = pa.struct([("s", pa.string_view())])
    repo.commit("s", pa.table({"__key__": ["a"], "c": pa.array([[{"s": "a"}]], pa.list_(st))}))
    repo.append("s", pa.table({"__key__": ["b"], "c": pa.array([[{"s": "b"}, {"s": "c"}]],
                                                              kind(st))}))
    assert [r["c"] for r in repo.dataset("s").samples()] == [[{"s": "a"}],
                                                               [{"s": "b"}, {"s": "c"}]]


def test_list_views_nested_in_an_appended_column(repo: dl.Repository) -> None:
    """QA review65e: a list view inside a struct appended to struct<list> was stored as empty
    lists (a large list view crashed); a list of list views failed with pyarrow's words."""
    for kind in (pa.list_view, pa.large_list_view):
        name = f"s{kind.__name__}"
        repo.commit(name, pa.table({"__key__": ["a"], "c": pa.array(
            [[{"x": [0]}]], pa.list_(pa.struct([("x", pa.list_(pa.int64()))])))}))
        repo.append(name, pa.table({"__key__": ["b"], "c": pa.array(
            [[{"x": [5, 6]}]], pa.list_(pa.struct([("x", kind(pa.int64()))])))}))
        assert [r["c"] for r in repo.dataset(name).samples()] == [[{"x": [0]}], [{"x": [5, 6]}]]
        repo.commit("n", pa.table({"__key__": ["a"], "c": pa.array(
            [[[0]]], pa.list_(pa.list_(pa.int64())))}))
        repo.append("n", pa.table({"__key__": ["b"], "c": pa.array(
            [[[5, 6], None]], pa.list_(kind(pa.int64())))}))
        assert [r["c"] for r in repo.dataset("n").samples()] == [[[0]], [[5, 6], None]]


def test_a_folder_that_is_a_root_is_not_committed_as_samples(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli_run import RunFn, runner

    inner = dl.Repository.open(str(tmp_path / "store"), cache_dir=str(tmp_path / "cache"))
    inner.commit("x", [("k", {"v": 1})])
    inner.cache_status()
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "other")])
    for folder in ("store", "cache"):
        err = run("commit", "p", "--from", str(tmp_path / folder), rc=1).err
        assert (f"is a dload {'root' if folder == 'store' else 'cache'}: its files are "
                f"{'manifests' if folder == 'store' else 'copies of shards'}") in err


def test_another_datasets_backup_nested_in_a_folder(local_root: str) -> None:
    repo = dl.Repository.open(local_root)
    repo.commit("p1", [("a", {"x": 1})])
    repo.commit("p2", [("b", {"x": 2})])
    shutil.copytree(f"{local_root}/datasets/p2", f"{local_root}/datasets/p1/p2.bak")
    with pytest.raises(dl.InvalidNameError, match=r"holds manifests of dataset 'p2' inside the "
                                                  r"folder of 'p1'.*datasets/p2/manifests/"):
        repo.gc(grace=0)


def test_list_views_in_fixed_size_lists_maps_and_beside_lists(repo: dl.Repository) -> None:
    """QA review65f: list views inside fixed-size lists and maps crashed or failed raw; a
    struct of a list view and a list stored the list's values as [] (the stored column held
    a view); a null struct row beside a list view was refused for its non-null field."""
    fsl = pa.list_(pa.list_(pa.int64()), 2)
    repo.commit("f", pa.table({"__key__": ["a"], "c": pa.array([[[0], [0]]], fsl)}))
    repo.append("f", pa.table({"__key__": ["b"], "c": pa.array(
        [[[1, 2], [3]]], pa.list_(pa.large_list_view(pa.int64()), 2))}))
    assert [r["c"] for r in repo.dataset("f").samples()] == [[[0], [0]], [[1, 2], [3]]]
    mt = pa.map_(pa.string(), pa.list_(pa.int64()))
    repo.commit("m", pa.table({"__key__": ["a"], "c": pa.array([[("z", [0])]], mt)}))
    repo.append("m", pa.table({"__key__": ["b"], "c": pa.array(
        [[("a", [1, 2])]], pa.map_(pa.string(), pa.list_view(pa.int64())))}))
    assert [r["c"] for r in repo.dataset("m").samples()][1] == [("a", [1, 2])]
    mixed = pa.struct([("a", pa.large_list_view(pa.int64())), ("b", pa.list_(pa.int64()))])
    repo.commit("x", pa.table({"__key__": ["a"], "c": pa.array([{"a": [1], "b": [2]}], mixed)}))
    views = pa.struct([("a", pa.large_list_view(pa.int64())),
                       ("b", pa.large_list_view(pa.int64()))])
    repo.append("x", pa.table({"__key__": ["b"], "c": pa.array([{"a": [1], "b": [3, 4]}],
                                                               views)}))  # never stored as []
    assert [r["c"]["b"] for r in repo.dataset("x").samples()] == [[2], [3, 4]]
    keep = pa.struct([("x", pa.list_view(pa.int64())), ("y", pa.int64())])
    repo.commit("k", pa.table({"__key__": ["a"], "c": pa.array([{"x": [0], "y": 1}], keep)}))
    narrow = pa.struct([("x", pa.list_view(pa.int64())), ("y", pa.int32())])
    repo.append("k", pa.table({"__key__": ["b"], "c": pa.array([{"x": [1, 2], "y": 2}],
                                                               narrow)}))  # (QA 65g)
    assert [r["c"] for r in repo.dataset("k").samples()][1] == {"x": [1, 2], "y": 2}
    st = pa.struct([pa.field("x", pa.list_(pa.int64())), pa.field("y", pa.int64(),
                                                                  nullable=False)])
    repo.commit("n", pa.table({"__key__": ["a"], "c": pa.array([{"x": [0], "y": 0}], st)}))
    vt = pa.struct([pa.field("x", pa.list_view(pa.int64())), pa.field("y", pa.int64(),
                                                                       nullable=False)])
    repo.append("n", pa.table({"__key__": ["b", "c"], "c": pa.array(
        [{"x": [1], "y": 1}, None], vt)}))
    assert [r["c"] for r in repo.dataset("n").samples()] == [
        {"x": [0], "y": 0}, {"x": [1], "y": 1}, None]


def test_a_removed_root_and_a_stray_file_in_a_backup(local_root: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from cli_run import RunFn, runner

    proj = tmp_path / "proj"
    (proj / "photos").mkdir(parents=True)
    (proj / "photos" / "a.txt").write_text("x")
    old = dl.Repository.open(str(proj / "oldstore"), cache_dir=str(tmp_path / "c0"))
    old.commit("x", [("k", {"v": 1})])
    old.rm("x")  # every dataset removed: its log and removal record stay
    run: RunFn = runner(capsys, ["--root", local_root])
    run("commit", "p", "--from", str(proj))
    assert [r["__key__"] for r in dl.Repository.open(local_root).dataset("p").samples()] == [
        "photos/a"]
    repo = dl.Repository.open(local_root)
    repo.commit("p2", [("b", {"x": 2})])
    shutil.copytree(f"{local_root}/datasets/p2", f"{local_root}/datasets/p/p2.bak")
    Path(local_root, "datasets/p/p2.bak/manifests/.DS_Store").write_bytes(b"\0\0\0\1Bud1")
    with pytest.raises(dl.InvalidNameError, match="holds manifests of dataset 'p2'"):
        dl.Repository.open(local_root).gc(grace=0)
