"""Archives read in place: formats agree with directories, hostile and corrupt ones refused,
zip random access by byte range on S3, and from_archive as a pipeline source."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import textwrap
import warnings
import zipfile
from pathlib import Path

import pytest
import zstandard

from dload_arrow import IntegrityError, Repository, SchemaError, UnsafePathError, from_archive
from dload_arrow.ingest import DirectorySource, open_archive

FILES = {
    f"s/{i:03d}.{ext}": (f"caption {i}" if ext == "txt" else bytes([i]) * (50 + i))
    for i in range(12) for ext in ("jpg", "txt")
}


def _bytes(v: bytes | str) -> bytes:
    return v.encode() if isinstance(v, str) else v


def write_zip(path: Path, files: dict[str, bytes | str], links: dict[str, str] | None = None,
              compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in files.items():
            z.writestr(name, _bytes(data))
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, target)
    return path


def _tar_bytes(files: dict[str, bytes | str], links: dict[str, str] | None = None,
               hard: dict[str, str] | None = None) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(_bytes(data))
            tf.addfile(info, io.BytesIO(_bytes(data)))
        for kind, table in ((tarfile.SYMTYPE, links or {}), (tarfile.LNKTYPE, hard or {})):
            for name, target in table.items():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = kind, target
                tf.addfile(info)
    return raw.getvalue()


def write_tar(path: Path, files: dict[str, bytes | str], checksum: bool = True,
              **links: dict[str, str]) -> Path:
    data = _tar_bytes(files, **links)
    if path.name.endswith(".gz"):
        import gzip

        data = gzip.compress(data, mtime=0)
    elif path.name.endswith(".zst"):  # the zstd tool writes frame checksums by default
        data = zstandard.ZstdCompressor(write_checksum=checksum).compress(data)
    path.write_bytes(data)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, data in FILES.items():
        p = tmp_path / "folder" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(_bytes(data))
    return tmp_path / "folder"


@pytest.mark.parametrize("suffix", [".zip", ".tar", ".tar.gz", ".tar.zst"])
def test_every_format_gives_the_directory_samples(
    suffix: str, folder: Path, tmp_path: Path, repo: Repository
) -> None:
    path = tmp_path / f"a{suffix}"
    (write_zip if suffix == ".zip" else write_tar)(path, dict(sorted(FILES.items())))
    expected = list(DirectorySource(folder))
    src = open_archive(str(path))
    assert list(src) == expected and src.schema.equals(DirectorySource(folder).schema)
    v_dir = repo.commit("d", DirectorySource(folder).reader(), progress=False)
    v_arc = repo.commit("d", open_archive(str(path)).reader(), progress=False)
    assert v_arc.version == v_dir.version and v_arc.bytes_uploaded == 0


def test_format_is_sniffed_when_the_extension_says_nothing(tmp_path: Path) -> None:
    write_tar(tmp_path / "x.tar.zst", FILES)
    os.rename(tmp_path / "x.tar.zst", tmp_path / "blob")
    assert len(open_archive(str(tmp_path / "blob"))) == 12


@pytest.mark.parametrize("name", ["../evil.txt", "/abs/evil.txt", "s/../../evil.txt",
                                  "C:/evil.txt", "..\\evil.txt"])
@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_hostile_entry_names_are_refused(
    name: str, kind: str, tmp_path: Path, repo: Repository
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    files = {"ok.txt": "fine", name: "pwned"}
    path = (write_zip if kind == "zip" else write_tar)(tmp_path / f"h.{kind}", files)
    with pytest.raises(UnsafePathError, match="refusing the archive"):
        repo.commit("h", open_archive(str(path)).reader(), progress=False)
    with pytest.raises(UnsafePathError):
        from_archive(str(path))
    assert "h" not in repo.datasets()
    leaked = [p for p in tmp_path.rglob("evil*")]
    assert leaked == [] and list(target.iterdir()) == []


def test_links_are_skipped_not_followed(tmp_path: Path) -> None:
    z = open_archive(str(write_zip(tmp_path / "l.zip", {"a.txt": "A"}, {"b.txt": "/etc/passwd"})))
    assert z.keys() == ["a"] and z.report.skipped == [("b.txt", "symbolic link (not followed)")]
    t = open_archive(str(write_tar(tmp_path / "l.tar", {"a.txt": "A"},
                                   links={"b.txt": "/etc/passwd"},
                                   hard={"c.txt": "a.txt", "d.txt": "/etc/passwd"})))
    assert t.keys() == ["a", "c"] and t.report.skipped == [
        ("b.txt", "symbolic link (not followed)"), ("d.txt", "hard link to no earlier file")]
    assert [s["txt"] for s in t] == ["A", "A"]  # a hard link reads as its target


def test_corrupt_archives_name_the_entry(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "c.zip", {"s/000.jpg": b"A" * 5000, "s/001.jpg": b"B" * 5000},
                     compression=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    at = data.index(b"B" * 100)
    data[at + 10] ^= 0xFF
    path.write_bytes(bytes(data))
    src = open_archive(str(path))
    assert src.get("s/000")["jpg"] == b"A" * 5000
    with pytest.raises(IntegrityError, match=r"entry 's/001\.jpg' is corrupt"):
        src.get("s/001")
    noisy = {f"s/{i:03d}.bin": os.urandom(20_000) for i in range(10)}
    for suffix in (".tar.gz", ".tar.zst", ".tar"):
        t = write_tar(tmp_path / f"c{suffix}", noisy)
        t.write_bytes(t.read_bytes()[: int(t.stat().st_size * 0.8)])
        cut = (r"(is corrupt|gzip stream ends before its end marker,|zstd stream ends inside a "
               r"frame,) in or after entry 's/00")
        with pytest.raises(IntegrityError, match=cut):
            open_archive(str(t)).keys()
    # cut exactly after a member's data: tarfile alone would end quietly there
    t = write_tar(tmp_path / "cut.tar", {"a.bin": b"x" * 512, "b.bin": b"y" * 512})
    t.write_bytes(t.read_bytes()[:2048])
    with pytest.raises(IntegrityError, match="end-of-archive"):
        open_archive(str(t)).keys()
    (tmp_path / "junk.zip").write_bytes(b"this is not a zip at all" * 10)
    with pytest.raises(IntegrityError, match="not a readable zip"):
        open_archive(str(tmp_path / "junk.zip")).keys()


def test_tar_with_scattered_sample_files_is_read_in_key_order(tmp_path: Path) -> None:
    """A tar of a folder in filesystem order scatters a sample's files: they are held until
    the sample is complete, and the samples come in key order (QA accept57b)."""
    files = {"b.jpg": b"2", "a.jpg": b"1", "c.txt": "z", "b.txt": "y", "c.jpg": b"3",
             "a.txt": "x"}
    path = write_tar(tmp_path / "s.tar", files)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the folder's order: nothing to warn of
        src = open_archive(str(path))
        assert src.keys() == ["a", "b", "c"]
        assert [(s["__key__"], s["jpg"], s["txt"]) for s in src] == [
            ("a", b"1", "x"), ("b", b"2", "y"), ("c", b"3", "z")]


def test_a_scattered_tar_too_large_to_hold_is_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.ingest import UnsortedWarning, order

    path = write_tar(tmp_path / "s.tar", {"a.jpg": b"1" * 600, "b.jpg": b"2" * 600,
                                          "a.txt": "x" * 600})
    # key order holds 1,800 B at once, the order samples complete 1,200 B
    monkeypatch.setenv("DLOAD_MEMORY_LIMIT", "2KB")  # 500 B may be held here: refused
    with pytest.raises(SchemaError, match=r"entry 'a\.txt'.*holding each file until its "
                                          r"sample is complete would take 1\.8 KB .*more "
                                          r"than a quarter of the memory available .*tar "
                                          r"--sort=name"):
        open_archive(str(path)).keys()
    monkeypatch.delenv("DLOAD_MEMORY_LIMIT")
    monkeypatch.setattr(order, "HOLD_CAP", 1500)  # as a tar of more than 1 GiB
    with pytest.warns(UnsortedWarning, match=r"not sorted by key .*key order would hold "
                                             r"1\.8 KB"):
        assert open_archive(str(path)).keys() == ["b", "a"]  # in the order they complete
    monkeypatch.setattr(order, "HOLD_CAP", 1000)
    with pytest.raises(SchemaError, match=r"would take 1\.2 KB of memory at once, more than "
                                          r"the cap for reading a tar's samples in another "
                                          r"order"):
        open_archive(str(path)).keys()


def test_from_archive_is_a_resumable_pipeline_source(tmp_path: Path, folder: Path) -> None:
    expected = list(DirectorySource(folder))
    for suffix in (".zip", ".tar.zst"):
        path = tmp_path / f"p{suffix}"
        (write_zip if suffix == ".zip" else write_tar)(path, dict(sorted(FILES.items())))
        pipe = from_archive(str(path))
        assert len(pipe) == 12 and list(pipe) == expected
        it = iter(pipe)
        head = [next(it) for _ in range(5)]
        state = pipe.state_dict()
        pipe.load_state_dict(state)
        assert head + list(pipe) == expected
    zpipe = from_archive(str(tmp_path / "p.zip"))
    assert zpipe.get("s/003")["txt"] == "caption 3"
    with pytest.raises(TypeError, match="tar stream"):
        from_archive(str(tmp_path / "p.tar.zst")).get("s/003")


def test_zip_on_s3_reads_only_ranges(tmp_path: Path, s3_root: str, s3_server) -> None:
    import s3fs

    big = {f"s/{i:03d}.bin": os.urandom(30_000) for i in range(40)}
    path = write_zip(tmp_path / "big.zip", big, compression=zipfile.ZIP_STORED)
    url = s3_root + "/incoming/big.zip"
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    fs.put(str(path), url)
    s3_server.clear()
    pipe = from_archive(url)
    assert pipe.get("s/017")["bin"] == big["s/017.bin"]
    assert s3_server.count("GET", contains="big.zip", ranged=False) == 0
    assert s3_server.count("GET", contains="big.zip", ranged=True) >= 2
    assert s3_server.bytes_sent("big.zip") < path.stat().st_size / 2
    tar_url = s3_root + "/incoming/t.tar.zst"
    fs.put(str(write_tar(tmp_path / "t.tar.zst", FILES)), tar_url)
    assert [s["__key__"] for s in open_archive(tar_url)] == sorted({k[:5] for k in FILES})


def test_a_zip_source_dropped_without_close_closes_its_file(tmp_path: Path, folder: Path) -> None:
    """Random access keeps the archive open; a pipeline never closed must not leak it."""
    import gc
    import warnings

    path = tmp_path / "d.zip"
    write_zip(path, {p.relative_to(folder).as_posix(): p.read_bytes()
                     for p in sorted(folder.rglob("*")) if p.is_file()})
    pipe = from_archive(str(path))
    assert pipe.get("s/003") is not None  # opens the archive
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        del pipe
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], caught


def test_an_abandoned_tar_iterator_exits_quietly(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import io, tarfile
        import dload_arrow as dl
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for i in range(5):
                data = b"x%d" % i
                info = tarfile.TarInfo(f"s{{i}}.txt")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        path = {str(tmp_path / "a.tar.gz")!r}
        open(path, "wb").write(buf.getvalue())
        it = iter(dl.from_archive(path))
        print(next(it)["__key__"])
        KEEP = it  # still open when the interpreter shuts down
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "s0"
    assert "Exception ignored" not in out.stderr, out.stderr


def test_a_tar_zst_without_checksums_warns_once_that_it_cannot_be_checked(
        tmp_path: Path) -> None:
    import warnings

    write_tar(tmp_path / "ok.tar.zst", FILES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checked archive says nothing
        assert len(list(open_archive(str(tmp_path / "ok.tar.zst")))) > 0
    write_tar(tmp_path / "bare.tar.zst", FILES, checksum=False)
    with pytest.warns(UserWarning, match="no zstd checksums") as got:
        assert len(list(open_archive(str(tmp_path / "bare.tar.zst")))) > 0
    assert len([w for w in got if "no zstd checksums" in str(w.message)]) == 1
