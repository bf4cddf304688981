"""QA ocr66, a document-AI team ingesting scans: the fix a bad label file's error gave
(`--exclude page_1.cls`) left out every folder's good label of that name; the fix for a text
file that is not UTF-8 was neither anchored nor escaped (a folder `[draft]`) and was cut at
": " (a folder `Client: ACME`), so it left out another file or nothing."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from cli_run import RunFn, runner

import dload_arrow as dl


def _suggested(err: str) -> str:
    """The --exclude value an error suggests, as a shell would pass it."""
    m = re.search(r"--exclude ('[^']*'|\S+?)[,) ]", err)
    assert m is not None, err
    return shlex.split(m.group(1))[0]


@pytest.mark.parametrize("folder", ["b", "[draft]", "Client: ACME"])
def test_the_exclude_an_error_suggests_leaves_out_that_file_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str) -> None:
    docs = tmp_path / "docs"
    for d in ("a", "c", "d", folder):
        (docs / d).mkdir(parents=True, exist_ok=True)
        (docs / d / "page_1.png").write_bytes(b"P")
        (docs / d / "page_1.cls").write_text("1\n")
        (docs / d / "page_1.txt").write_text("ok")
    (docs / folder / "page_1.cls").write_text("x")
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "r"), "--cache-dir",
                                 str(tmp_path / "c")])
    first = _suggested(run("commit", "lab", "--from", str(docs), rc=1).err)
    (docs / folder / "page_1.cls").write_text("1\n")
    (docs / folder / "page_1.txt").write_bytes(b"caf\xe9")
    second = _suggested(run("commit", "lab", "--from", str(docs), rc=1).err)
    (docs / folder / "page_1.cls").write_text("x")
    run("commit", "lab", "--from", str(docs), "--exclude", first, "--exclude", second)
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    got = {s["__key__"]: (s["cls"], s["txt"]) for s in repo.dataset("lab").samples()}
    assert got == {f"{d}/page_1": ((None, None) if d == folder else (1, "ok"))
                   for d in ("a", "c", "d", folder)}


def test_warnings_name_files_and_keys_as_written_and_their_exclude_works(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA ocr66 F3, F7: the labels-table warning printed `'\\u66f8\\u985e/...csv'` (ascii()),
    so its suggested --exclude matched nothing and the table was committed as a sample; the
    case-twin warning showed keys so too."""
    docs = tmp_path / "in" / "書類"
    docs.mkdir(parents=True)
    for i in range(10, 22):
        (docs / f"p{i}.png").write_bytes(b"P")
        (docs / f"p{i}.json").write_text("{}")
    (docs / "ラベル.csv").write_text("doc,label\np10,a\n")
    (docs / "Été.png").write_bytes(b"P")
    (docs / "été.json").write_text("{}")
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "r"), "--cache-dir",
                                 str(tmp_path / "c")])
    err = run("commit", "a", "--from", str(tmp_path / "in")).err
    assert "'書類/ラベル.csv' shares no column" in err and "\\u" not in err
    assert "keys '書類/Été' (columns ['png']) and '書類/été'" in err
    fix = re.search(r"leave it out \(--exclude (\S+);", err)
    assert fix is not None
    run("commit", "b", "--from", str(tmp_path / "in"), "--exclude", shlex.split(fix.group(1))[0])
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    assert "csv" not in repo.dataset("b").schema.names
    assert repo.dataset("b").num_rows == repo.dataset("a").num_rows - 1


def test_a_zip_of_unflagged_cjk_names_is_warned_of(tmp_path: Path) -> None:
    """QA ocr66 F4: a zip from Windows in a Japanese locale (CP932 names, no UTF-8 flag) was
    committed with garbled keys (read as CP437) and nothing said; a tar is refused."""
    import struct
    import zlib

    def zip_raw(path: Path, names: list[str], enc: str = "cp932") -> None:  # as Explorer
        out, cd = bytearray(), bytearray()
        for n in names:
            fn, data = n.encode(enc), b"P"
            crc, off = zlib.crc32(data), len(out)
            out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, 1, 1, len(fn),
                               0) + fn + data
            cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, 1, 1,
                              len(fn), 0, 0, 0, 0, 0, off) + fn
        path.write_bytes(bytes(out + cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0,
                                                      len(names), len(names), len(cd),
                                                      len(out), 0)))

    import warnings

    for name in ("Müller.png", "Größe.png", "niño.png"):  # a Western zip's CP437 names
        zip_raw(tmp_path / "west.zip", [name], "cp437")  # are right: no warning (66e)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            keys = [s["__key__"] for s in dl.from_archive(str(tmp_path / "west.zip"))]
        assert keys == [name.removesuffix(".png")]
    zip_raw(tmp_path / "scans.zip", ["領収書/レシート_1.png", "領収書/レシート_1.json"])
    repo = dl.Repository.open(str(tmp_path / "r"), cache_dir=str(tmp_path / "c"))
    with pytest.warns(UserWarning, match=r"2 entry name\(s\) are neither UTF-8 nor flagged.*"
                      r"as cp932: '領収書/レシート_1.png'.*unzip -O cp932"):
        repo.commit("receipts", dl.from_archive(str(tmp_path / "scans.zip")))
    import zipfile
    with zipfile.ZipFile(tmp_path / "ok.zip", "w") as z:  # flagged UTF-8: no warning
        z.writestr("領収書/a.png", b"P")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repo.commit("ok", dl.from_archive(str(tmp_path / "ok.zip")))


def test_page_images_beside_dotted_ocr_files_get_one_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA ocr66 F6: page_N.png beside page_N.ocr.json warned "one field under two extensions
    ... convert them" as well as the right "--split first" warning."""
    docs = tmp_path / "in" / "doc1"
    docs.mkdir(parents=True)
    for i in range(1, 6):
        (docs / f"page_{i}.png").write_bytes(b"P")
        (docs / f"page_{i}.ocr.json").write_text("{}")
    run: RunFn = runner(capsys, ["--root", str(tmp_path / "r"), "--cache-dir",
                                 str(tmp_path / "c")])
    err = run("commit", "a", "--from", str(tmp_path / "in")).err
    assert "--split first" in err and "two extensions" not in err
