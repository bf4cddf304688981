"""Ingestion findings of the seventh QA pass: zip entries sharing a header name, unreadable
subfolders, a tar changed after it was listed, hard links in a tar, names that are not UTF-8,
S3 object names with spaces, key order of tars, pathlib paths, zstd long windows, unsupported
zip methods, drive letters, and skippable zstd frames."""

from __future__ import annotations

import io
import os
import pickle
import shutil
import struct
import subprocess
import tarfile
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_run import RunFn, runner

import dload_arrow as dl
from dload_arrow import (
    ConfigError,
    IntegrityError,
    InvalidNameError,
    Repository,
    SchemaError,
)
from dload_arrow.ingest import open_source


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _rawzip(path: Path, entries: list[tuple[bytes, bytes, str | None, int, int]]) -> Path:
    """A stored zip written byte by byte: (header name, data, Unicode Path field or None,
    flag bits, compression method) per entry, what zipfile cannot be made to write."""
    out, cd = bytearray(), bytearray()
    for name, data, upath, flags, method in entries:
        extra = b""
        if upath:
            body = b"\x01" + struct.pack("<I", zlib.crc32(name)) + upath.encode()
            extra = struct.pack("<HH", 0x7075, len(body)) + body
        off, crc, n = len(out), zlib.crc32(data), len(data)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0, crc, n, n,
                           len(name), len(extra)) + name + extra + data
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, method, 0, 0, crc,
                          n, n, len(name), len(extra), 0, 0, 0, 0, off) + name + extra
    path.write_bytes(bytes(out + cd + struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(cd), len(out), 0)))
    return path


# --- 1. zip entries that share a header name ---------------------------------------------------


def test_zip_entries_sharing_a_header_name_keep_their_own_bytes(
        tmp_path: Path, repo: Repository) -> None:
    # What a Windows zipper on a Western code page writes for CJK names: '??.jpg' twice, the
    # real names in Unicode Path fields. Reading by name gave both the last entry's bytes.
    p = _rawzip(tmp_path / "x.zip", [(b"??.jpg", b"JAPAN", "日本.jpg", 0, 0),
                                    (b"??.jpg", b"CHINA", "中国.jpg", 0, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile's own 'Duplicate name'
        src = open_source(str(p))
        assert {s["__key__"]: s["jpg"] for s in src} == {"日本": b"JAPAN", "中国": b"CHINA"}
        assert pickle.loads(pickle.dumps(src)).get("日本")["jpg"] == b"JAPAN"  # workers
        repo.commit("x", open_source(str(p)).reader())
    assert {s["__key__"]: s["jpg"] for s in repo.dataset("x")} == {
        "日本": b"JAPAN", "中国": b"CHINA"}


# --- 2. a subfolder that cannot be read ---------------------------------------------------------


def test_an_unreadable_subfolder_fails_the_commit_naming_it(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    for f in ("ok/a.bin", "locked/b.bin", "c.bin"):
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_bytes(b"x")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:  # chmod 000 does not stop root: refuse it here
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(PermissionError, match=r"locked.*chmod"):
        open_source(str(src)).keys()
    r = run("commit", "x", "--from", str(src), rc=1)
    assert "locked" in r.err and "cannot list the folder" in r.err


# --- 3. a tar replaced after it was listed --------------------------------------------------------


def _tar(path: Path, files: dict[str, bytes], **kw: Any) -> Path:
    with tarfile.open(path, "w", **kw) as t:
        for n, b in files.items():
            ti = tarfile.TarInfo(n)
            ti.size = len(b)
            t.addfile(ti, io.BytesIO(b))
    return path


@pytest.mark.parametrize("new", [
    {"a0.txt": b"new"} | {f"s{i}.txt": b"v2" for i in range(6)},  # an entry in front
    {f"s{i}.txt": b"v1" for i in range(3)},                     # cut short
    {f"s{i}.txt": b"v1" if i != 2 else b"longer" for i in range(5)},  # a size changed
])
def test_a_tar_changed_since_it_was_listed_fails_the_epoch(
        tmp_path: Path, new: dict[str, bytes]) -> None:
    p = _tar(tmp_path / "data.tar", {f"s{i}.txt": b"v1" for i in range(5)})
    pipe = dl.from_archive(p)
    assert len(list(pipe)) == 5
    _tar(p, new)
    with pytest.raises(IntegrityError, match="changed since it was listed"):
        list(pipe)


# --- 4. hard links in a tar -----------------------------------------------------------------------


def test_a_tar_hard_link_reads_as_its_target_and_the_tar_commits_as_its_folder(
        tmp_path: Path, run: RunFn) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jpg").write_bytes(b"A" * 300)
    os.link(src / "a.jpg", src / "b.jpg")
    (src / "c.jpg").write_bytes(b"C")
    np.save(src / "e.npy", np.arange(6).reshape(2, 3))
    os.link(src / "e.npy", src / "f.npy")
    with tarfile.open(tmp_path / "x.tar", "w") as t:  # b.jpg: a hard link to a.jpg
        for name in ("a.jpg", "b.jpg", "c.jpg", "e.npy", "f.npy"):
            t.add(src / name, name)
    with tarfile.open(tmp_path / "x.tar") as t:
        assert sum(m.islnk() for m in t) == 2
    r = run("commit", "x", "--from", str(tmp_path / "x.tar"), "--json")
    assert r.json["source"]["skipped"] == []
    folder = run("commit", "x", "--from", str(src), "--json")
    assert folder.json["version"] == r.json["version"]  # the same samples, the same id
    rows = {s["__key__"]: s for s in open_source(str(tmp_path / "x.tar"))}
    assert rows["b"]["jpg"] == rows["a"]["jpg"] == b"A" * 300
    assert rows["f"]["npy"].tolist() == [[0, 1, 2], [3, 4, 5]]
    # the link alone (its target left out): read from the target all the same, and the
    # .npy shape of a column whose only file is a link comes from the target too
    only = open_source(str(tmp_path / "x.tar"), include=["b.jpg", "f.npy"])
    assert [(s["__key__"], s["jpg"] is not None) for s in only] == [("b", True), ("f", False)]
    assert only.schema.field("npy").metadata == {b"dload.shape": b"[2, 3]"}


def test_a_tar_hard_link_to_no_earlier_file_is_reported_with_the_fix(tmp_path: Path,
                                                                      run: RunFn) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "c.jpg").write_bytes(b"C")
    (src / "d.jpg").symlink_to("c.jpg")
    with tarfile.open(tmp_path / "x.tar", "w") as t:
        t.add(src / "c.jpg", "c.jpg")
        t.add(src / "d.jpg", "d.jpg")
        info = tarfile.TarInfo("b.jpg")
        info.type, info.linkname = tarfile.LNKTYPE, "gone.jpg"
        t.addfile(info)
    r = run("commit", "x", "--from", str(tmp_path / "x.tar"), "--json")
    assert {(s["name"], s["reason"]) for s in r.json["source"]["skipped"]} == {
        ("b.jpg", "hard link to no earlier file"), ("d.jpg", "symbolic link (not followed)")}
    text = open_source(str(tmp_path / "x.tar")).report.skipped_text()
    assert "1 hard link in a tar to no file stored before it (b.jpg): recreate the tar " \
           "with `tar --hard-dereference`" in text
    assert "`tar --dereference`" in text


def test_a_tar_whose_link_target_changed_since_listing_is_refused(tmp_path: Path) -> None:
    def write(target: bytes) -> None:
        with tarfile.open(tmp_path / "x.tar", "w") as t:
            info = tarfile.TarInfo("a.bin")
            info.size = len(target)
            t.addfile(info, io.BytesIO(target))
            link = tarfile.TarInfo("b.bin")
            link.type, link.linkname = tarfile.LNKTYPE, "a.bin"
            t.addfile(link)

    write(b"1234")
    pipe = dl.from_archive(tmp_path / "x.tar", include=["b.bin"])
    assert [s["bin"] for s in pipe] == [b"1234"]
    write(b"12345")
    with pytest.raises(IntegrityError, match="changed since it was listed"):
        list(pipe)


# --- 5. names that are not UTF-8 --------------------------------------------------------------


def test_a_name_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path, run: RunFn) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.bin").write_bytes(b"y")
    with open(os.path.join(os.fsencode(src), b"caf\xe9.bin"), "wb") as f:
        f.write(b"x")
    tar = _tar(tmp_path / "x.tar", {b"caf\xe9.bin".decode("utf-8", "surrogateescape"): b"x",
                                    "ok.bin": b"y"}, format=tarfile.GNU_FORMAT)
    for frm in (src, tar):
        r = run("commit", "x", "--from", str(frm), rc=1)
        assert "b'caf\\xe9.bin' is not UTF-8" in r.err and "convmv" in r.err
        with pytest.raises(InvalidNameError, match="not UTF-8"):
            open_source(str(frm)).keys()
        # the fix it names works: leave it out
        assert open_source(str(frm), exclude=["caf*"]).keys() == ["ok"]


# --- 6. a zip name flagged UTF-8 that is not ---------------------------------------------------


def test_a_zip_name_flagged_utf8_that_is_not_is_a_corrupt_archive(tmp_path: Path,
                                                                   run: RunFn) -> None:
    p = _rawzip(tmp_path / "x.zip", [(b"caf\xe9.bin", b"x", None, 0x800, 0)])
    with pytest.raises(IntegrityError, match=r"b'caf\\xe9.bin' is flagged as UTF-8"):
        dl.from_archive(p)
    assert "not a readable zip archive" in run("commit", "x", "--from", str(p), rc=1).err


# --- 11. a zip method zipfile cannot read ---------------------------------------------------------


@pytest.mark.parametrize(("method", "name"), [(9, "Deflate64"), (93, "Zstandard"), (98, "PPMd")])
def test_an_unsupported_zip_method_is_named_with_the_fix(
        tmp_path: Path, run: RunFn, method: int, name: str) -> None:
    p = _rawzip(tmp_path / "x.zip", [(b"a.bin", b"hello", None, 0, method)])
    with pytest.raises(ConfigError, match=f"{name} \\(zip method {method}\\)"):
        open_source(str(p)).keys()
    err = run("commit", "x", "--from", str(p), rc=1).err
    assert "zip -r -Z deflate" in err and "corrupt" not in err


# --- 7. S3 input objects with everyday names -----------------------------------------------------


def test_s3_archives_with_spaces_and_accents_in_their_names_are_read(
        s3_root: str, s3_server: Any, run: RunFn) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("cats/01.jpg", b"jpg")
    bucket = s3_root[len("s3://"):].split("/")[0]
    for name in ("my photos.zip", "ünï.zip", "my data/photos.zip"):
        fs.pipe_file(f"{bucket}/{name}", buf.getvalue())
        url = f"s3://{bucket}/{name}"
        assert list(dl.from_archive(url)) == [{"__key__": "cats/01", "jpg": b"jpg"}]
        assert run("commit", "p", "--from", url, "--json").json["rows"] == 1


# --- 8. the advice for a tar in key order -------------------------------------------------------


@pytest.mark.skipif(not all(shutil.which(t) for t in ("tar", "awk", "sort", "find")),
                    reason="needs a shell with tar, awk, sort and find")
@pytest.mark.parametrize(("files", "split"), [
    ({"cat.jpg": b"1", "cat-2.jpg": b"2"}, "last"),               # '-' sorts before '.'
    ({"a.bin": b"1", "a/x.bin": b"2"}, "last"),                    # a folder beside a file
    ({"img.jpg": b"a", "img.seg.png": b"b", "img.txt": b"c"}, "last"),  # keys img, img.seg
    ({"x.seg.png": b"a", "x-1.jpg": b"b", "x.jpg": b"c"}, "first"),
    ({"-dash.jpg": b"1", "a b\\c.jpg": b"2", "n.jpg": b"3"}, "last"),  # not tar's options
    ({"ta\tb.jpg": b"1", "ta.jpg": b"2", "new\nline.jpg": b"3", "t.jpg": b"4"}, "last"),
])
def test_the_advised_command_writes_a_tar_in_key_order(
        tmp_path: Path, run: RunFn, files: dict[str, bytes], split: str) -> None:
    from dload_arrow.ingest.order import key_order_command

    src = tmp_path / "src"
    for name, data in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(data)
    subprocess.run(key_order_command(split), shell=True, cwd=src, check=True)
    folder = run("commit", "x", "--from", str(src), "--split", split, "--json")
    tar = run("commit", "x", "--from", str(tmp_path / "data.tar"), "--split", split, "--json")
    assert tar.json["version"] == folder.json["version"] and tar.err == ""


def test_the_order_messages_give_a_command_that_works(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.ingest import UnsortedWarning, order
    from dload_arrow.ingest.order import key_order_command

    p = _tar(tmp_path / "a.tar", {"cat-2.jpg": b"2", "cat.jpg": b"1"})
    assert open_source(str(p)).keys() == ["cat", "cat-2"]  # held: key order
    monkeypatch.setattr(order, "HOLD_CAP", 1)  # as a tar of more than 1 GiB
    with pytest.warns(UnsortedWarning) as got:
        open_source(str(p)).keys()
    assert key_order_command() in str(got[0].message)
    assert "e.g. `tar --sort=name`" not in str(got[0].message)
    monkeypatch.undo()
    p = _tar(tmp_path / "m.tar", {"img.jpg": b"a", "img.seg.png": b"b", "img.txt": b"c"})
    assert open_source(str(p)).keys() == ["img", "img.seg"]  # held: as its folder reads
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "4B")  # too little to hold them
    with pytest.raises(SchemaError, match="With --split first") as e:
        open_source(str(p)).keys()
    assert key_order_command() in str(e.value)
    monkeypatch.undo()
    assert open_source(str(p), split="first").keys() == ["img"]  # the advice holds


# --- 9. pathlib paths ----------------------------------------------------------------------------


def test_open_source_and_open_table_take_a_pathlib_path(tmp_path: Path) -> None:
    from dload_arrow.ingest import ZipSource, detect_kind, open_archive, open_table

    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "001.jpg").write_bytes(b"\xff\xd8")
    with zipfile.ZipFile(tmp_path / "photos.zip", "w") as z:
        z.writestr("001.jpg", b"\xff\xd8")
    _tar(tmp_path / "photos.tar", {"001.jpg": b"\xff\xd8"})
    (tmp_path / "t.csv").write_text("id,kind\n1,click\n")
    for p in ("photos", "photos.zip", "photos.tar"):
        src = open_source(tmp_path / p)
        assert src.keys() == ["001"] and src.location == str(tmp_path / p)
    assert open_archive(tmp_path / "photos.zip").keys() == ["001"]
    assert ZipSource(tmp_path / "photos.zip").keys() == ["001"]
    assert detect_kind(tmp_path / "t.csv") == "table"
    assert open_table(tmp_path / "t.csv").read_all().num_rows == 1


# --- 10, 13. zstd frames: a long window, a skippable frame first -------------------------------


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for n, b in files.items():
            ti = tarfile.TarInfo(n)
            ti.size = len(b)
            t.addfile(ti, io.BytesIO(b))
    return buf.getvalue()


def test_a_tar_zst_written_with_a_long_window_is_read(tmp_path: Path) -> None:
    import zstandard

    # what `zstd --long=28` writes: a 256 MiB window, more than the decoder's default allows
    params = zstandard.ZstdCompressionParameters(window_log=28, enable_ldm=True,
                                                 write_checksum=1, write_content_size=0)
    buf = io.BytesIO()
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(
            buf, closefd=False) as w:
        w.write(_tar_bytes({"a.txt": b"hi"}))
    assert zstandard.get_frame_parameters(buf.getvalue()).window_size == 1 << 28
    (tmp_path / "x.tar.zst").write_bytes(buf.getvalue())
    assert list(dl.from_archive(tmp_path / "x.tar.zst")) == [{"__key__": "a", "txt": "hi"}]


def test_a_skippable_first_frame_gives_no_missing_checksum_warning(tmp_path: Path) -> None:
    import zstandard

    frame = zstandard.ZstdCompressor(write_checksum=True).compress(_tar_bytes({"a.txt": b"hi"}))
    skippable = struct.pack("<II", 0x184D2A50, 4) + struct.pack("<I", len(frame))  # pzstd's
    (tmp_path / "x.tar.zst").write_bytes(skippable + frame)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert list(dl.from_archive(tmp_path / "x.tar.zst")) == [{"__key__": "a", "txt": "hi"}]
    assert [str(w.message) for w in got if "checksums" in str(w.message)] == []
    # a data frame without checksums after the skippable one is still told of
    frame = zstandard.ZstdCompressor().compress(_tar_bytes({"a.txt": b"hi"}))
    (tmp_path / "y.tar.zst").write_bytes(struct.pack("<II", 0x184D2A5F, 0) + frame)
    with pytest.warns(UserWarning, match="no zstd checksums"):
        dl.from_archive(tmp_path / "y.tar.zst")


# --- 12. drive letters ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "ok"), [
    ("1:a.jpg", "1:a.jpg"), ("./1:a.jpg", "1:a.jpg"), ("a/C:/x.bin", "a/C:/x.bin"),
    ("C:/evil.bin", None), ("./C:/evil.bin", None), (".\\c:\\evil.bin", None),
    ("C:evil.bin", "C:evil.bin"), ("a:b.jpg", "a:b.jpg"), ("C:", None), ("/x.bin", None),
])
def test_a_drive_letter_is_a_letter_and_is_checked_after_dropping_dot_slash(
        tmp_path: Path, name: str, ok: str | None) -> None:
    from dload_arrow import UnsafePathError
    from dload_arrow.ingest import check_entry_name

    if ok is None:
        with pytest.raises(UnsafePathError, match="absolute path"):
            check_entry_name(name, "x.tar")
        with pytest.raises(UnsafePathError):
            open_source(str(_tar(tmp_path / "x.tar", {name: b"x"}))).keys()
    else:
        assert check_entry_name(name, "x.tar") == ok
        assert open_source(str(_tar(tmp_path / "x.tar", {name: b"x"}))).keys() == [
            ok.rsplit(".", 1)[0]]


# --- minor: `dload ingest` -----------------------------------------------------------------------


def test_dload_ingest_points_at_commit_from(run: RunFn) -> None:
    err = run("ingest", "x", rc=1).err
    assert "dload commit NAME --from PATH" in err and "init" not in err


# --- review: what --exclude leaves out is never read -------------------------------------------


def test_an_excluded_unreadable_subfolder_is_not_listed(
        tmp_path: Path, run: RunFn, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    for f in ("data/a.bin", "lost+found/b.bin"):
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_bytes(b"x")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:  # a root-only lost+found, as a user sees it
        if os.fspath(path).endswith("lost+found"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(PermissionError, match="--exclude"):
        open_source(str(src)).keys()
    assert open_source(str(src), exclude=["lost+found"]).keys() == ["data/a"]
    run("commit", "x", "--from", str(src), "--exclude", "lost+found")


def test_an_excluded_zip_entry_with_an_unsupported_method_is_not_refused(
        tmp_path: Path) -> None:
    p = _rawzip(tmp_path / "x.zip", [(b"a.txt", b"hello", None, 0, 0),
                                     (b"big/huge.bin", b"data", None, 0, 9)])
    with pytest.raises(ConfigError, match="--exclude"):
        open_source(str(p)).keys()
    for exclude in (["big"], ["*.bin"]):
        assert [s["txt"] for s in open_source(str(p), exclude=exclude)] == ["hello"]


def test_a_skipped_name_that_is_not_utf8_is_shown_not_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_bytes(b"x")
    os.symlink(os.fsencode(src / "a.txt"), os.path.join(os.fsencode(src), b"lnk\xe9.txt"))
    os.mkdir(os.path.join(os.fsencode(src), b".hid\xe9"))
    s = open_source(str(src))
    assert s.keys() == ["a"]
    assert sorted(s.report.skipped) == [(".hid\\xe9/", "hidden directory (not read)"),
                                        ("lnk\\xe9.txt", "symbolic link (not followed)")]
