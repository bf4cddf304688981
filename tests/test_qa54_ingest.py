"""Hostile input to ingestion and export (QA hostile54): user errors, not internal ones.

- ``dload export`` of a key whose name part is longer than the filesystem allows (a tar
  can hold one; commit accepts it) failed with an internal error after creating folders;
- export onto a file that is a symbolic link (refused by O_NOFOLLOW, rightly) was an internal
  error too;
- a folder inside ``--from`` that lists but cannot be entered (mode 644) failed with a bare
  ``[Errno 13]``, where an unreadable folder gets the fix.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from test_cli import dload


def _tar(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return path


def test_export_of_a_too_long_name_is_a_user_error_and_writes_nothing(
        tmp_path: Path, local_root: str) -> None:
    long = "dir/" + "n" * 300
    src = _tar(tmp_path / "x.tar", {long + ".txt": b"hi", "short.txt": b"ok"})
    base = ["--root", local_root]
    dload("commit", "x", "--from", str(src), *base, cwd=tmp_path)
    out = tmp_path / "out"
    r = dload("export", "x", long, "--to", str(out), *base, cwd=tmp_path, rc=1)
    assert r.err.startswith(f"dload: error: sample {long!r} column 'txt': the file name "
                            f"{'n' * 40!r}... is 304 bytes, longer than the filesystem under "
                            f"{out} allows (255); nothing was written"), r.err
    assert not out.exists()  # planned before any folder is made
    r = dload("export", "x", "short", "--to", str(out), *base, cwd=tmp_path)
    assert (out / "short.txt").read_bytes() == b"ok"


def test_export_onto_a_symlink_is_refused_with_the_fix(tmp_path: Path, local_root: str) -> None:
    src = _tar(tmp_path / "x.tar", {"short.txt": b"ok"})
    base = ["--root", local_root]
    dload("commit", "x", "--from", str(src), *base, cwd=tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"keep me")
    os.symlink(elsewhere, out / "short.txt")
    r = dload("export", "x", "short", "--to", str(out), *base, cwd=tmp_path, rc=1)
    assert r.err == (f"dload: error: {out / 'short.txt'} is a symbolic link, which export does "
                     f"not write through (it could lead outside {out}): remove it, or export "
                     "to an empty folder\n")
    assert elsewhere.read_bytes() == b"keep me"
    (out / "short.txt").unlink()
    (out / "short.txt").mkdir()  # a folder where the file goes
    r = dload("export", "x", "short", "--to", str(out), *base, cwd=tmp_path, rc=1)
    assert r.err.startswith(f"dload: error: cannot write {out / 'short.txt'}: Is a directory")


def _unprivileged() -> list[str]:
    """A prefix that runs a command without root's permission override (or nothing)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv (util-linux): cannot test permissions")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-dac_override,-dac_read_search"]


def test_a_folder_that_lists_but_cannot_be_entered_says_how_to_fix(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    data = tmp_path / "data"
    (data / "noexec").mkdir(parents=True)
    (data / "a.txt").write_text("a")
    (data / "noexec" / "b.txt").write_text("b")
    (data / "noexec").chmod(0o644)  # r without x: its names list, its files cannot be opened
    code = ("import sys; from dload_arrow.ingest import open_source; "
            "open_source(sys.argv[1]).keys()")
    try:
        r = subprocess.run([*_unprivileged(), sys.executable, "-c", code, str(data)],
                           capture_output=True, text=True, timeout=120)
    finally:
        (data / "noexec").chmod(0o755)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1
    assert last == (
        f"PermissionError: [Errno 13] cannot list the folder '{data / 'noexec'}' in "
        f"'{data}' (Permission denied); its files would be left out: make it readable (e.g. "
        f"`chmod -R u+rX {data / 'noexec'}`), move it out of the folder, or leave it out with "
        "--exclude (exclude= in Python)"), r.stderr


def test_an_archive_of_archives_is_refused_under_auto_with_the_way_on(
        tmp_path: Path, local_root: str) -> None:
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w") as t:
        ti = tarfile.TarInfo("n01/img1.jpg")
        ti.size = 3
        t.addfile(ti, io.BytesIO(b"jpg"))
    train = _tar(tmp_path / "train.tar", {"n01440764.tar": inner.getvalue(),
                                          "n01443537.tar.gz": b"x", "extra.jpg": b"no"})
    base = ["--root", local_root]
    r = dload("commit", "train", "--from", str(train), *base, cwd=tmp_path)  # not only archives
    assert "3 rows" in r.out
    train = _tar(tmp_path / "train.tar", {"n01440764.tar": inner.getvalue(),
                                          "n01443537.tar": inner.getvalue(), "_SUCCESS": b""})
    r = dload("commit", "imagenet", "--from", str(train), *base, cwd=tmp_path, rc=1)
    assert r.err == (
        f"dload: error: {str(train)!r} is an archive of archives ('n01440764.tar' and 1 more): "
        "each inner archive would be stored as one sample's bytes, not read as samples; extract "
        "it (`mkdir train && tar -xf train.tar -C train`), then commit each inner archive "
        "(`dload commit NAME --from INNER`, or `dload append` for the next ones), or extract "
        "those too and commit the folder; or commit it with --as archive to store each inner "
        "archive as one sample's bytes\n")
    assert "imagenet" not in dload("ls", *base, cwd=tmp_path).out
    r = dload("commit", "imagenet", "--from", str(train), "--as", "archive", *base, cwd=tmp_path)
    assert "2 rows" in r.out


def test_keys_that_differ_only_in_unicode_form_are_warned_of(tmp_path: Path) -> None:
    import unicodedata
    import warnings
    import zipfile

    from dload_arrow.ingest import open_source

    nfc, nfd = (unicodedata.normalize(f, "café") for f in ("NFC", "NFD"))
    path = tmp_path / "nf.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(nfc + ".txt", "composed")
        z.writestr(nfd + ".txt", "decomposed")
        z.writestr("plain.txt", "ascii")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        src = open_source(path)
        assert sorted(src.keys()) == sorted([nfc, nfd, "plain"])  # both kept: no data lost
    said = [str(w.message) for w in got if "Unicode normalization" in str(w.message)]
    assert said == [
        f"{path}: keys 'caf\\xe9' and 'cafe\\u0301' differ only in Unicode normalization: they "
        "print the same but are two samples, and ds.get() finds one or the other by how the key "
        "is typed; if they are meant to be one, give their names one form (in a folder: "
        "`convmv -r -f utf8 -t utf8 --nfc --notest DIR`)"]
    one = tmp_path / "one.zip"
    with zipfile.ZipFile(one, "w") as z:
        z.writestr(nfd + ".txt", "decomposed only: no twin, no warning")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert open_source(one).keys() == [nfd]
    assert not [w for w in got if "Unicode" in str(w.message)]


def test_export_through_a_symlinked_folder_makes_nothing_outside(tmp_path: Path) -> None:
    """(review54) the folders were made before the link was found: empty folders outside."""
    from dload_arrow.errors import StorageError, UnsafePathError
    from dload_arrow.ingest.export import write_sample_files

    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    os.symlink(outside, dest / "link")
    with pytest.raises(UnsafePathError, match="link leads outside"):
        write_sample_files({"__key__": "link/a/b/x", "txt": "hi"}, dest)
    assert list(outside.iterdir()) == []
    (dest / "d").write_text("a file where a folder must go")
    with pytest.raises(StorageError, match=r"cannot create the folder .*/dest/d/e: a file is in "
                                           r"the way \(.*/dest/d"):
        write_sample_files({"__key__": "d/e/x", "txt": "hi"}, dest)
