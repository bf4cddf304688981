"""QA review64c, the review of the review's fixes: a float's fraction dropped in a time column
of a commit's schema=; numbers in a map's time values or a dictionary column; pandas
Timestamps of mixed units; UTC spellings; an archive --exclude leaves empty among several;
pad_collate over frames of frames; the dotted hint two levels deep."""

from __future__ import annotations

import datetime as dt
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def test_a_float_into_a_time_column_of_schema_is_refused(repo: dl.Repository) -> None:
    for typ, value in [(pa.timestamp("s"), 1700000000.75), (pa.duration("s"), 1.5),
                       (pa.date32(), 19000.9), (pa.timestamp("s"), 1700000000.0)]:
        with pytest.raises(dl.SchemaError, match=r"holds a float, but .* takes whole numbers"):
            repo.commit("f", [("a", {"v": value})], schema=pa.schema([("v", typ)]))
    repo.commit("f", [("a", {"v": 1700000000})], schema=pa.schema([("v", pa.timestamp("s"))]))
    assert repo.dataset("f").get("a")["v"] == dt.datetime(2023, 11, 14, 22, 13, 20)


def test_numbers_in_a_map_or_a_dictionary_column_are_refused(repo: dl.Repository) -> None:
    mt = pa.map_(pa.string(), pa.timestamp("us"))
    repo.commit("m", [("a", {"m": {"start": dt.datetime(2024, 1, 1)}})],
                schema=pa.schema([("m", mt)]))
    with pytest.raises(dl.SchemaError, match=r"holds a number at m\{value\}"):
        repo.append("m", [("b", {"m": {"start": 1700000000}})])
    with pytest.raises(dl.SchemaError, match=r"its values at \{value\} are numbers"):
        repo.append("m", pa.table({"__key__": ["c"], "m": pa.array(
            [[("start", 1700000000)]], pa.map_(pa.string(), pa.int64()))}))
    repo.commit("d", pa.table({"__key__": ["a"], "ts": pa.array([dt.datetime(2024, 1, 1)])}))
    codes = pa.array([1700000000]).dictionary_encode()
    with pytest.raises(dl.SchemaError, match="its values are numbers"):
        repo.append("d", pa.table({"__key__": ["b"], "ts": codes}))


def test_timestamps_of_mixed_units_keep_nanoseconds(repo: dl.Repository) -> None:
    a, b = pd.Timestamp("2024-01-01 10:00:00.123456789"), pd.Timestamp("2024-01-02")
    assert (a.unit, b.unit) == ("ns", "us") or b.unit != "ns"
    repo.commit("u", [("a", {"t": a}), ("b", {"t": b}), ("c", {"t": dt.datetime(2024, 1, 3)})])
    assert repo.dataset("u").schema.field("t").type == pa.timestamp("ns")
    assert repo.dataset("u").get("a")["t"] == a


@pytest.mark.parametrize("tz", ["utc", "Europe/Berlin"])
def test_dates_into_other_zones_are_refused_by_dload(repo: dl.Repository, tz: str) -> None:
    repo.commit("z", pa.table({"__key__": ["a"], "ts": pa.array([dt.datetime(2024, 1, 1)],
                                                                pa.timestamp("us", tz))}))
    with pytest.raises(dl.SchemaError, match="are dates"):
        repo.append("z", pa.table({"__key__": ["b"], "ts": pa.array([dt.date(2024, 1, 2)])}))


def test_an_archive_left_out_whole_among_others_is_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], local_root: str) -> None:
    run: RunFn = runner(capsys, ["--root", local_root])
    for name, files in (("day-1.tar", ["n1.txt", "n2.txt"]), ("day-2.tar", ["x.tmp"])):
        with tarfile.open(tmp_path / name, "w") as t:
            for f in files:
                (tmp_path / f).write_text(f)
                t.add(tmp_path / f, arcname=f)
    r = run("commit", "shots", "--from", str(tmp_path / "day-1.tar"), "--from",
            str(tmp_path / "day-2.tar"), "--exclude", "*.tmp")
    assert "left out whole by --include/--exclude (day-2.tar)" in r.err
    assert dl.Repository.open(local_root).dataset("shots").num_rows == 2


def test_frames_of_frames_with_a_batch_of_null_frames(repo: dl.Repository) -> None:
    t = pa.list_(pa.list_(pa.list_(pa.float32())))
    repo.commit("ep", pa.table({"__key__": list("abcde"), "f": pa.array(
        [[[[1.0, 2.0]]], [None, None], [[[1.0, 2.0], [3.0, 4.0]]], [], None], t)}))
    got = [b["f"] for b in repo.dataset("ep").pipeline().batch(1, collate=dl.pad_collate())]
    assert [g.shape for g in got[3:]] == [(1, 0, 0, 0), (1, 0, 0, 0)]  # (QA review64d)
    got = got[:3]
    assert [g.shape for g in got] == [(1, 1, 1, 2), (1, 2, 0, 0), (1, 1, 2, 2)]


def test_the_dotted_hint_two_levels_deep(repo: dl.Repository) -> None:
    repo.commit("m", pa.table({"__key__": ["a"], "meta": [{"sub": {"x": 1}}]}))
    with pytest.raises(dl.SchemaError, match=r"r\['meta'\]\['sub'\]\['x'\]"):
        repo.dataset("m").to_arrow(columns=["meta.sub.x"])
    with pytest.raises(dl.SchemaError) as e:
        repo.dataset("m").to_arrow(columns=["meta.sub.nope"])
    assert "is a field of" not in str(e.value)


def test_review64d_neighbours(repo: dl.Repository) -> None:
    """QA review64d: nanoseconds in a list or struct field of unit us were cut silently; a
    map's time keys took numbers; NaN into a schema's time column was told int(v); a field
    stored as null warned at every append; the null advice named one of two null fields; the
    dotted hint through a list gave keys that fail."""
    ns = pd.Timestamp("2024-01-01 10:00:00.123456789")
    with pytest.raises(dl.SchemaError, match=r"holds a time at t\[\] finer than its field's "
                                             r"unit \(timestamp\[us\]\)"):
        repo.commit("n", [("a", {"t": [ns]})])
    with pytest.raises(dl.SchemaError, match=r"at s\.t finer"):
        repo.commit("n", [("a", {"s": {"t": ns}})])
    repo.commit("mk", pa.table({"__key__": ["a"], "m": pa.array(
        [[(dt.datetime(2024, 1, 1), 1)]], pa.map_(pa.timestamp("us"), pa.int64()))}))
    with pytest.raises(dl.SchemaError, match=r"its values at \{key\} are numbers"):
        repo.append("mk", pa.table({"__key__": ["b"], "m": pa.array(
            [[(1700000000, 1)]], pa.map_(pa.int64(), pa.int64()))}))
    with pytest.raises(dl.SchemaError, match=r"is NaN, but timestamp.s. holds times: give None"):
        repo.commit("nan", [("a", {"t": float("nan")})],
                    schema=pa.schema([("t", pa.timestamp("s"))]))
    with pytest.warns(UserWarning):  # (the commit's: no value in s.a, top)
        repo.commit("x", [("a", {"s": {"a": None, "c": 1}, "top": None, "v": 1})])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.append("x", [("b", {"s": {"a": None, "c": 2}, "top": None, "v": 2})])
    rows = [(f"d{i:05d}", {"s": {"a": None, "b": None, "c": 1}}) for i in range(1100)]
    with pytest.warns(UserWarning), pytest.raises(dl.SchemaError,
                                                  match=r"s\.a and s\.b were None"):
        repo.commit("nulls", [*rows, ("z", {"s": {"a": None, "b": 5, "c": 1}})])
    repo.commit("seg", pa.table({"__key__": ["a"], "segments": [[{"image": b"x"}]]}))
    with pytest.raises(dl.SchemaError, match=r"r\['segments'\]\[i\]\['image'\]") as e:
        repo.dataset("seg").to_arrow(columns=["segments.image"])
    assert "SELECT" not in str(e.value)


def test_review64e_neighbours(repo: dl.Repository) -> None:
    """QA review64e: a gap (None, NaT) among ns Timestamps typed the column us; rows whose
    frames are all empty crashed pad_collate; a fixed last axis became 0 in a batch without
    points; datetime64[ns] arrays as lists were refused as numbers; a dictionary key column's
    bad text crashed."""
    ns = pd.Timestamp("2024-01-01 10:00:00.123456789")
    for gap in (None, pd.NaT):
        repo.commit("g", [("a", {"t": ns}), ("b", {"t": gap})])
        assert repo.dataset("g").schema.field("t").type == pa.timestamp("ns")
    L = pa.list_
    repo.commit("det", pa.table({"__key__": list("abc"), "boxes": pa.array(
        [[[[1.0, 2.0, 3.0, 4.0]]], [[], []], [[], None]], L(L(L(pa.float32()))))}))
    pipe = repo.dataset("det").pipeline()
    got = [b["boxes"].shape for b in pipe.batch(1, collate=dl.pad_collate())]
    assert got == [(1, 1, 1, 4), (1, 2, 0, 0), (1, 2, 0, 0)]
    fixed = L(L(pa.list_(pa.float32(), 3)))
    repo.commit("pts", pa.table({"__key__": list("ab"), "p": pa.array(
        [[[[1.0, 2.0, 3.0]]], [[]]], fixed)}))
    shapes = [b["p"].shape for b in repo.dataset("pts").pipeline().batch(
        1, collate=dl.pad_collate())]
    assert shapes == [(1, 1, 1, 3), (1, 1, 0, 3)]
    arr = np.array(["2024-01-01T10:00:00.123456789"], "datetime64[ns]")
    repo.commit("arr", [("a", {"t": arr})], schema=pa.schema([("t", L(pa.timestamp("ns")))]))
    assert repo.dataset("arr").get("a")["t"] == [ns]
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.array([0, 1, 2], pa.int32()).buffers()[1],
                                                 pa.py_buffer(b"a\xff")])
    keys = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), bad)
    with pytest.raises(dl.SchemaError, match="key column '__key__', row 1"):
        repo.commit("dk", pa.table({"__key__": keys, "v": [1, 2]}))


def test_diff_takes_a_hex_dataset_name_as_the_dataset(repo: dl.Repository) -> None:
    """QA lineage64: `diff b@OLD b` read `b` as a version prefix of b when one started so."""
    i = 0
    while True:  # a version whose id starts with "b", then a latest that does not
        v = repo.commit("b", [(f"k{j}", {"x": j + i}) for j in range(3)])
        i += 1
        if v.version.startswith("b") and sum(
                x.version.startswith("b") for x in repo.versions("b")) == 1:
            break
    old = v.version
    while repo.dataset("b").version.startswith("b"):
        repo.commit("b", [(f"k{j}", {"x": j + i}) for j in range(3)] + [(f"n{i}", {"x": 0})])
        i += 1
    d = repo.diff(f"b@{old[:8]}", "b")
    assert d.new["version"] == repo.dataset("b").version != old


def test_a_write_to_a_pinned_dataset_warns(repo: dl.Repository, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """QA lineage64: a derive (or commit, append) into a dataset dload.lock pins said nothing,
    and repo.dataset(name) went on reading the pinned version."""
    monkeypatch.chdir(tmp_path)
    v1 = repo.commit("a", [("k", {"x": 1})])
    (tmp_path / "dload.lock").write_text(f'[datasets]\na = "{v1.version}"\n')
    with pytest.warns(UserWarning, match=r"'a' is pinned in .*dload.lock to .* goes on giving "
                                         r"that version, not .* just published"):
        repo.append("a", [("k2", {"x": 2})])
    assert repo.dataset("a").version == v1.version


def test_a_dataset_copied_by_commit_keeps_its_types(repo: dl.Repository) -> None:
    """QA lineage64: repo.commit(NEW, repo.dataset(OLD)) re-inferred its types from Python
    values (uint8 -> int64, float32 -> double), silently."""
    repo.commit("photos", [(f"k{i}", {"label": np.uint8(i), "score": np.float32(i / 3),
                                      "emb": np.zeros(4, np.float32)}) for i in range(5)])
    old = repo.dataset("photos")
    repo.commit("images", old)
    new = repo.dataset("images")
    assert new.schema.equals(old.schema, check_metadata=True)
    assert new.to_arrow().equals(old.to_arrow())
    view = old.where("label >= 3")
    repo.commit("top", view)
    assert repo.dataset("top").num_rows == 2


def test_a_parent_given_twice_is_stored_once(repo: dl.Repository) -> None:
    a = repo.commit("a", [("k", {"x": 1})])
    p = {"name": "a", "version": a.version}
    twice = repo.commit("b", [("k", {"x": 2})], parents=[p, dict(p)])
    assert repo.manifest("b").parents == [p]
    repo.rm("b")
    once = repo.commit("b", [("k", {"x": 2})], parents=[p])
    assert twice.version == once.version  # (the repeat changed the id)
    assert len(repo.sql("SELECT * FROM parents WHERE name = 'b'")) == 1


def test_review64f_neighbours(repo: dl.Repository) -> None:
    """QA review64f: whole-microsecond datetime64[ns] arrays refused for a us list column; a
    float NaN among Timestamps a bare ValueError; a nested NaN's field not named."""
    whole = np.array(["2024-01-01T10:00:00.123456", "NaT"], "datetime64[ns]")
    repo.commit("w", [("a", {"t": whole})], schema=pa.schema([("t", pa.list_(pa.timestamp("us")))]))
    assert repo.dataset("w").get("a")["t"] == [dt.datetime(2024, 1, 1, 10, 0, 0, 123456), None]
    with pytest.raises(dl.SchemaError, match="sample 'b', column 't'"):
        repo.commit("n", [("a", {"t": pd.Timestamp("2024-01-01")}), ("b", {"t": float("nan")})])
    st = pa.struct([("start", pa.int64()), ("end", pa.timestamp("us"))])
    with pytest.raises(dl.SchemaError, match=r"is NaN at c\.end"):
        repo.commit("s", [("a", {"c": {"start": 5, "end": float("nan")}})],
                    schema=pa.schema([("c", st)]))


def test_a_bare_version_id_where_a_dataset_is_named(repo: dl.Repository) -> None:
    """QA lineage64: `dload info 3f2a9c` said only that no such dataset exists."""
    v = repo.commit("a", [("k", {"x": 1})])
    with pytest.raises(dl.NotFoundError, match=rf"'{v.version[:12]}' is a version of 'a': name "
                                               rf"it a@{v.version[:12]}"):
        repo.dataset(v.version[:12])


def test_review64g_and_docs64(repo: dl.Repository, local_root: str) -> None:
    """QA review64g: a Dataset committed as another stored its lists as list<element> (a new
    version id for the same rows); numpy ns times inside a struct were stored as counts of
    us (1 s as 1000 s); a NaN in a list of Timestamps was a bare ValueError. QA docs64: rows
    of frames of two widths had no _length; a dataset folder copied under a valid name
    (p1.bak) made `ls` and SQL fail for the whole root."""
    import shutil
    import warnings

    v = repo.commit("src", [("a", {"toks": [1, 2], "s": {"l": [1.5]}})])
    assert repo.commit("src", repo.dataset("src")).version == v.version  # the same rows
    with pytest.raises(dl.SchemaError, match=r"holds numpy timedelta64\[ns\] times at "
                                             r"seg\.lens, but that field holds duration\[us\]"):
        repo.commit("ns", [("a", {"seg": {"lens": [dt.timedelta(seconds=1)]}}),
                           ("b", {"seg": {"lens": np.array([10**9], "timedelta64[ns]")}})])
    with pytest.raises(dl.SchemaError, match="sample 'a', column 't'"):
        repo.commit("nan", [("a", {"t": [pd.Timestamp("2024-01-01"), float("nan")]})])
    repo.commit("fr", pa.table({"__key__": list("ab"), "f": pa.array(
        [[[1.0, 2.0]], [[1.0, 2.0, 3.0], None]], pa.list_(pa.list_(pa.float32())))}))
    b = next(iter(repo.dataset("fr").pipeline().batch(2, collate=dl.pad_collate(mask=True))))
    assert isinstance(b["f"], list) and b["f_length"].tolist() == [1, 2]
    assert b["f_mask"].tolist() == [[True, False], [True, False]]
    shutil.copytree(f"{local_root}/datasets/src", f"{local_root}/datasets/src.bak")
    with pytest.warns(UserWarning, match=r"datasets/src\.bak .* copies of those of 'src'"):
        assert "src.bak" not in repo.datasets()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert "src.bak" not in repo.sql("SELECT name FROM datasets").column("name").to_pylist()


def test_review64h(repo: dl.Repository, local_root: str) -> None:
    """QA review64h: pad_collate(dtype=) refused a stored ragged sentences-of-tokens column it
    used to give as lists; max_length did not cut such lists; a half-copied manifest in a
    copy's folder failed the listing; SQL warned once per copied version."""
    import shutil
    import warnings

    repo.commit("s", pa.table({"__key__": list("ab"), "sents": pa.array(
        [[[1, 2], [3]], [[4, 5, 6]]], pa.list_(pa.list_(pa.int32())))}))
    with warnings.catch_warnings():
        warnings.filterwarnings("error")
        warnings.filterwarnings("ignore", "pad_collate: column 'sents' holds rows of rows")
        b = next(iter(repo.dataset("s").pipeline().batch(
            2, collate=dl.pad_collate(dtype="int64", max_length=1, mask=True))))
    assert b["sents"] == [[[1, 2]], [[4, 5, 6]]] and b["sents_length"].tolist() == [1, 1]
    for i in range(3):
        repo.append("s", pa.table({"__key__": [f"n{i}"], "sents": pa.array(
            [[[i]]], pa.list_(pa.list_(pa.int32())))}))
    shutil.copytree(f"{local_root}/datasets/s", f"{local_root}/datasets/Copy_of_s")
    bad = sorted((tmp := Path(local_root, "datasets", "Copy_of_s", "manifests")).iterdir())[0]
    bad.write_bytes(bad.read_bytes()[:50])  # half copied
    with pytest.warns(UserWarning, match="Copy_of_s"):
        assert repo.datasets() == ["s"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        repo.sql("SELECT count(*) FROM versions")
    assert len([x for x in w if "Copy_of_s" in str(x.message)]) <= 2, tmp  # a folder, a kind


def test_review64i_columns_leave_other_lists_alone(repo: dl.Repository) -> None:
    """QA review64i: with columns=, a stored ragged list<list<T>> column it leaves out was cut
    at max_length and given keys."""
    repo.commit("s", pa.table({"__key__": list("ab"), "tok": pa.array([[1, 2], [3]]),
                               "sents": pa.array([[[1, 2], [3]], [[4, 5, 6]]],
                                                 pa.list_(pa.list_(pa.int32())))}))
    b = next(iter(repo.dataset("s").pipeline().batch(
        2, collate=dl.pad_collate(columns=["tok"], max_length=1))))
    assert b["sents"] == [[[1, 2], [3]], [[4, 5, 6]]] and "sents_length" not in b
    assert b["tok"].tolist() == [[1], [3]]


def test_a_dataset_folder_renamed_outside_dload(tmp_path: Path, local_root: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """QA review64i: `mv datasets/p1 datasets/p2` made `dload ls` fail for the whole root, the
    hint naming a dataset (p1) no longer there."""
    import shutil

    run: RunFn = runner(capsys, ["--root", local_root])
    repo = dl.Repository.open(local_root)
    repo.commit("p1", [("a", {"x": 1})])
    repo.commit("q", [("a", {"x": 2})])
    shutil.move(f"{local_root}/datasets/p1", f"{local_root}/datasets/p2")
    r = run("ls")
    assert "q " in r.out and "p2" in r.out and "which names dataset 'p1'" in r.err
    with pytest.raises(dl.InvalidNameError, match=r"the folder datasets/p2 holds manifest .*, "
                                                  r"which names dataset 'p1'.* back to datase"):
        dl.Repository.open(local_root).dataset("p2")


def test_a_renamed_folder_beside_its_original_is_not_moved_back(local_root: str) -> None:
    """QA review64j: "move it back to datasets/p1" while datasets/p1 was there (a cp -r
    backup, or p1 recommitted after the rename): a merging move mixed the two."""
    import shutil

    repo = dl.Repository.open(local_root)
    repo.commit("p1", [("a", {"x": 1})])
    shutil.copytree(f"{local_root}/datasets/p1", f"{local_root}/datasets/p2")
    with pytest.raises(dl.InvalidNameError, match=r"move it out of the root: datasets/p1 is "
                                                  r"there"):
        repo.dataset("p2")
