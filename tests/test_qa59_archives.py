"""QA migrate59: WebDataset shards. A folder of tar shards was refused as "an archive of
archives" (with an empty command and a wrong --as), the Python route committed each tar as
one sample's bytes, and a repeated --from kept only the last one, silently. A folder of
archives, a repeated --from and a quoted pattern now commit every archive's samples."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow.errors import SchemaError
from dload_arrow.ingest import ArchiveSet, open_archives, open_source


def _tar(path: Path, members: dict[str, bytes], mode: str = "w") -> None:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def _shards(folder: Path, n: int = 3, per: int = 4) -> dict[str, dict[str, Any]]:
    """WebDataset shards (the last one gzipped) and what each sample holds."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    want: dict[str, dict[str, Any]] = {}
    for s in range(n):
        members: dict[str, bytes] = {}
        for j in range(per):
            key = f"{s * per + j:06d}"
            jpg = rng.integers(0, 256, 300, dtype=np.uint8).tobytes()
            members |= {f"{key}.jpg": jpg, f"{key}.cls": str(j % 3).encode(),
                        f"{key}.json": json.dumps({"s": s}).encode()}
            want[key] = {"jpg": jpg, "cls": j % 3}
        gz = s == n - 1
        _tar(folder / f"wds-{s:06d}.tar{'.gz' if gz else ''}", members, "w:gz" if gz else "w")
    (folder / "README.md").write_text("shards\n")  # a document beside them is no data
    return want


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _rows(root: str, name: str) -> list[dict[str, Any]]:
    return list(dl.Repository.open(root).dataset(name).samples())


def test_a_folder_of_tar_shards_commits_every_sample(run: RunFn, tmp_path: Path,
                                                     local_root: str) -> None:
    want = _shards(tmp_path / "shards")
    out = run("commit", "wds", "--from", str(tmp_path / "shards"), "--json").json
    assert out["source"]["kind"] == "archives" and out["source"]["archives"] == 3
    rows = _rows(local_root, "wds")
    assert [r["__key__"] for r in rows] == sorted(want)  # archive after archive, name order
    for r in rows:
        assert r["jpg"] == want[r["__key__"]]["jpg"] and r["cls"] == want[r["__key__"]]["cls"]
    # the same shards named another way: the same version
    again = run("commit", "wds", "--from", str(tmp_path / "shards" / "wds-*.tar*"),
                "--json").json
    assert again["version"] == out["version"]
    listed = [str(p) for p in sorted((tmp_path / "shards").glob("wds-*"))]
    third = run("commit", "wds", "--from", listed[0], "--from", listed[1], "--from",
                listed[2], "--json").json
    assert third["version"] == out["version"]


def test_a_brace_pattern_and_a_repeated_from_keep_the_order_given(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    _shards(tmp_path / "s", n=3)
    base = tmp_path / "s"
    run("commit", "b", "--from", f"{base}/wds-{{000000..000001}}.tar")
    assert len(_rows(local_root, "b")) == 8
    run("commit", "r", "--from", f"{base}/wds-000001.tar", "--from", f"{base}/wds-000000.tar")
    keys = [r["__key__"] for r in _rows(local_root, "r")]
    assert keys[:4] == [f"{i:06d}" for i in range(4, 8)]  # the order given
    r = run("commit", "n", "--from", f"{base}/wds-{{000007..000009}}.tar", rc=1)
    assert "matches no file" in r.err and "000007" in r.err


def test_several_sources_that_are_not_all_archives_are_refused(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    _shards(tmp_path / "s", n=1)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.txt").write_text("x")
    r = run("commit", "m", "--from", str(tmp_path / "s" / "wds-000000.tar.gz"), "--from",
            str(tmp_path / "plain"), rc=1)
    assert "is a folder" in r.err and "dload append" in r.err
    r = run("commit", "m", "--from", str(tmp_path / "s"), "--from", str(tmp_path / "s"),
            "--as", "table", rc=1)
    assert "only as archives" in r.err
    assert not (Path(local_root) / "datasets" / "m").exists()


def test_a_key_in_two_archives_is_refused_before_anything_is_stored(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    (tmp_path / "d").mkdir()
    _tar(tmp_path / "d" / "a.tar", {"k.cls": b"1"})
    _tar(tmp_path / "d" / "b.tar", {"k.cls": b"2"})
    r = run("commit", "k", "--from", str(tmp_path / "d"), rc=1)
    assert "'k' is in two archives, 'a.tar' and 'b.tar'" in r.err
    assert not (Path(local_root) / "datasets" / "k").exists()


def test_columns_are_every_archives_and_one_type_each(tmp_path: Path, local_root: str) -> None:
    (tmp_path / "d").mkdir()
    _tar(tmp_path / "d" / "a.tar", {"x.cls": b"1"})
    _tar(tmp_path / "d" / "b.tar", {"y.cls": b"2", "y.txt": b"hi"})
    src = open_source(tmp_path / "d")
    assert isinstance(src, ArchiveSet)
    repo = dl.Repository.open(local_root)
    repo.commit("c", src.reader(), progress=False)
    assert _rows(local_root, "c") == [{"__key__": "x", "cls": 1, "txt": None},
                                      {"__key__": "y", "cls": 2, "txt": "hi"}]
    buf = io.BytesIO()
    np.save(buf, np.zeros((2, 2), np.float32))
    other = io.BytesIO()
    np.save(other, np.zeros((3,), np.int64))
    _tar(tmp_path / "e.tar", {"p.npy": buf.getvalue()})
    _tar(tmp_path / "f.tar", {"q.npy": other.getvalue()})
    with pytest.raises(SchemaError, match="column 'npy' is"):
        open_archives([tmp_path / "e.tar", tmp_path / "f.tar"]).reader()


def test_the_python_route_reads_a_folder_of_shards_as_samples(tmp_path: Path,
                                                               local_root: str) -> None:
    want = _shards(tmp_path / "shards", n=2, per=3)
    src = open_source(tmp_path / "shards", split="first")
    assert len(src) == 6 and src.keys() == sorted(want)
    v = dl.Repository.open(local_root).commit("p", src.reader(), progress=False)
    assert v.num_rows == 6
    with pytest.raises(TypeError, match="open_archives"):
        dl.from_archive([str(tmp_path / "shards" / "wds-000000.tar")])  # type: ignore[arg-type]


def test_archives_in_subfolders_are_refused_with_a_way_that_works(
        run: RunFn, tmp_path: Path, local_root: str) -> None:
    for split in ("train", "val"):
        (tmp_path / "sh" / split).mkdir(parents=True)
        _tar(tmp_path / "sh" / split / "0.tar", {f"{split}.cls": b"1"})
    r = run("commit", "s", "--from", str(tmp_path / "sh"), rc=1)
    assert "folder of archives in subfolders" in r.err and "(``)" not in r.err
    assert "--as archive" not in r.err
    run("commit", "s", "--from", str(tmp_path / "sh" / "*" / "*.tar"))
    assert [x["__key__"] for x in _rows(local_root, "s")] == ["train", "val"]
    run("commit", "s2", "--from", str(tmp_path / "sh" / "train"), "--from",
        str(tmp_path / "sh" / "val"))  # two folders of archives: their archives
    assert len(_rows(local_root, "s2")) == 2


def test_appending_a_folder_of_shards(run: RunFn, tmp_path: Path, local_root: str) -> None:
    _shards(tmp_path / "one", n=1)
    (tmp_path / "two").mkdir()
    _tar(tmp_path / "two" / "wds-000009.tar", {"000100.jpg": b"j", "000100.cls": b"1",
                                                "000100.json": b"{}"})
    _tar(tmp_path / "two" / "wds-000010.tar", {"000101.jpg": b"k", "000101.cls": b"2",
                                                "000101.json": b"{}"})
    run("commit", "a", "--from", str(tmp_path / "one"))
    out = run("append", "a", "--from", str(tmp_path / "two"), "--json").json
    assert out["rows"] == 6 and out["source"]["archives"] == 2


def test_several_remote_archives(run: RunFn, tmp_path: Path, s3_root: str,
                                 s3_server: Any) -> None:
    import s3fs

    _shards(tmp_path / "s", n=2, per=2)
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    for p in sorted((tmp_path / "s").glob("wds-*")):
        fs.put_file(str(p), f"{bucket}/raw/{p.name}")
    out = run("commit", "r", "--from", f"s3://{bucket}/raw/wds-000000.tar", "--from",
              f"s3://{bucket}/raw/wds-000001.tar.gz", "--json").json
    assert out["rows"] == 4 and out["source"]["archives"] == 2


def test_many_zip_archives_keep_one_file_open_at_a_time(tmp_path: Path, local_root: str) -> None:
    import subprocess
    import sys
    import textwrap
    import zipfile

    (tmp_path / "z").mkdir()
    for i in range(300):
        with zipfile.ZipFile(tmp_path / "z" / f"wds-{i:06d}.zip", "w") as z:
            z.writestr(f"k{i:06d}.txt", f"x{i}")
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))  # fewer than the archives
        from dload_arrow.cli.main import main
        sys.exit(main(["commit", "many", "--from", {str(tmp_path / "z")!r},
                       "--root", {local_root!r}]))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = _rows(local_root, "many")
    assert len(rows) == 300 and rows[7] == {"__key__": "k000007", "txt": "x7"}


def test_tensors_of_two_shapes_across_archives_name_the_shapes(tmp_path: Path) -> None:
    a, b = io.BytesIO(), io.BytesIO()
    np.save(a, np.zeros((2, 3), np.float32))
    np.save(b, np.zeros((3, 2), np.float32))
    _tar(tmp_path / "p0.tar", {"k0.npy": a.getvalue()})
    _tar(tmp_path / "p1.tar", {"k1.npy": b.getvalue()})
    with pytest.raises(SchemaError) as e:
        open_archives([tmp_path / "p0.tar", tmp_path / "p1.tar"]).reader()
    assert "of shape [2, 3] in 'p0.tar'" in str(e.value)
    assert "of shape [3, 2] in 'p1.tar'" in str(e.value)


def test_an_archive_given_twice_is_named(run: RunFn, tmp_path: Path) -> None:
    _tar(tmp_path / "a.tar", {"k.cls": b"1"})
    r = run("commit", "t", "--from", str(tmp_path / "a.tar"), "--from",
            str(tmp_path / "a.tar"), rc=1)
    assert "is given twice" in r.err


def test_one_archive_under_two_names_and_archives_sharing_a_name(
        run: RunFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _tar(tmp_path / "a.tar", {"k.cls": b"1"})
    r = run("commit", "t", "--from", "a.tar", "--from", "./a.tar", rc=1)
    assert "one archive is given under 2 names" in r.err
    for split in ("train", "val"):
        (tmp_path / split).mkdir()
        _tar(tmp_path / split / "a.tar", {"k.cls": b"1"})
    r = run("commit", "t", "--from", "train/a.tar", "--from", "val/a.tar", rc=1)
    assert "'train/a.tar' and 'val/a.tar'" in r.err


def test_a_remote_pattern_is_said_to_be_local_only(run: RunFn, s3_root: str) -> None:
    bucket = s3_root.removeprefix("s3://").split("/")[0]
    r = run("commit", "r", "--from", f"s3://{bucket}/raw/wds-{{000000..000001}}.tar", rc=1)
    assert "expanded for local paths only" in r.err and "repeat" in r.err
