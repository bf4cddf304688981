"""`dload` CLI and ingest findings of the sixth QA pass: a tar's order and its version id, the
skipped-files summary, a non-UTF-8 recipe, a closed stdout, Python warnings in the CLI's
format, an encrypted zip, --meta NaN, backslashes in file names, what `rm --version` does to
refs, a pipe as --from, truncated and unsupported compressed archives, `init --user
--project` and a negative `export --index`.

Most checks run `main()` in this process; those that need a real pipe or the interpreter's
own warning machinery run `dload` as a subprocess.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import zstandard
from cli_run import RunFn, runner
from test_cli import DLOAD, dload

from dload_arrow import Repository
from dload_arrow.ingest import open_archive


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _tar_bytes(files: list[tuple[str, bytes]], mode: str = "w") -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode=mode) as tf:  # type: ignore[call-overload]
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def _folder(base: Path, files: dict[str, bytes]) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (base / name).write_bytes(data)
    return base


# --- 1. a tar not sorted by key: the folder's version id up to 1 GiB held, else a warning --


def test_an_unsorted_tar_gets_the_folders_version_id(run: RunFn, tmp_path: Path) -> None:
    d = _folder(tmp_path / "d", {"b.jpg": b"1", "a.jpg": b"2"})
    plain = tmp_path / "plain.tar"
    plain.write_bytes(_tar_bytes([("b.jpg", b"1"), ("a.jpg", b"2")]))
    ordered = tmp_path / "sorted.tar"
    ordered.write_bytes(_tar_bytes([("a.jpg", b"2"), ("b.jpg", b"1")]))
    folder = run("commit", "d", "--from", str(d), "--json")
    same = run("commit", "d", "--from", str(ordered), "--json")
    assert same.json["version"] == folder.json["version"] and same.err == ""
    other = run("commit", "d", "--from", str(plain), "--json")  # (held, then key order)
    assert other.json["version"] == folder.json["version"] and other.err == ""


def test_open_archive_warns_once_for_a_tar_too_large_to_sort(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.ingest import UnsortedWarning, order
    from dload_arrow.ingest.order import key_order_command

    monkeypatch.setattr(order, "HOLD_CAP", 1)  # as a tar of more than 1 GiB out of order
    plain = tmp_path / "plain.tar"
    plain.write_bytes(_tar_bytes([("b.jpg", b"1"), ("a.jpg", b"2"), ("c.jpg", b"3")]))
    src = open_archive(str(plain))
    with pytest.warns(UnsortedWarning, match="'b' comes before 'a'") as got:
        assert src.keys() == ["b", "a", "c"]
        assert [s["__key__"] for s in src] == ["b", "a", "c"]
    assert len(got) == 1
    assert str(got[0].message) == (
        f"{plain}: its samples are not sorted by key ('b' comes before 'a') (key order would "
        "hold 2 B of its files at once, more than 1 B), so its version id differs from the one "
        "the same files get from a folder or a zip; to get the same id, commit the extracted "
        f"folder, or rebuild the tar in key order, inside the folder: {key_order_command()} "
        "(`tar --sort=name` sorts names, not keys)")


# --- 2. more than five skipped files: the count of the rest ---------------------------------

def test_skipped_files_beyond_five_are_counted(run: RunFn, tmp_path: Path) -> None:
    d = _folder(tmp_path / "d", {"a.jpg": b"1"})
    for i in range(8):
        os.symlink("a.jpg", d / f"l{i}.jpg")
    lines = run("commit", "s", "--from", str(d)).err.splitlines()
    assert lines == [  # one line for the reason, with its fix (tests/test_qa8_cli.py)
        "skipped 8 symbolic links, not followed (l0.jpg, l1.jpg, l2.jpg, ...): copy the files "
        "they point to in their place (a tar: recreate it with `tar --dereference`)",
        "(the names of all 8 skipped: --json)"]


# --- 3. a recipe that is not UTF-8 ----------------------------------------------------------

def test_a_recipe_that_is_not_utf8_is_a_user_error_naming_the_file(run: RunFn,
                                                                  tmp_path: Path) -> None:
    d = _folder(tmp_path / "d", {"a.jpg": b"1"})
    (tmp_path / "make.py").write_bytes(b"\xff\xfe\x00")
    r = run("commit", "r", "--from", str(d), "--recipe", str(tmp_path / "make.py"), rc=1)
    assert r.err.startswith(f"dload: error: --recipe {str(tmp_path / 'make.py')!r} is not "
                            "UTF-8 text (byte 0 is 0xff)")


# --- 4. stdout closed early (`| head`) -----------------------------------------------------

def test_a_closed_stdout_pipe_exits_0_silently(tmp_path: Path) -> None:
    root = tmp_path / "root"
    Repository.open(str(root)).commit("x", {"k": {"txt": b"1"}})
    proc = subprocess.Popen([DLOAD, "sql", "select * from range(200000)", "--csv", "--root",
                             str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"range\n"
    proc.stdout.close()  # as `head -1` does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert err == b""


# --- 5. Python warnings look like the CLI's own --------------------------------------------

def test_a_library_warning_is_one_line_in_the_clis_format(tmp_path: Path) -> None:
    data = _tar_bytes([("a.jpg", b"1")])
    nock = tmp_path / "nock.tar.zst"
    nock.write_bytes(zstandard.ZstdCompressor(write_checksum=False).compress(data))
    r = dload("commit", "n", "--from", str(nock), "--root", str(tmp_path / "root"),
              cwd=tmp_path)
    assert r.err == (
        f"warning: {nock}: this .tar.zst has no zstd checksums, so a byte changed in transit or "
        "on disk cannot be detected and would be committed as it is; write it with `zstd` "
        "(checksums on by default) or ship a sha256sum beside it\n")


# --- 6. an encrypted zip: the reason, not the globs ----------------------------------------

def test_an_encrypted_zip_says_its_entries_are_encrypted(run: RunFn, tmp_path: Path) -> None:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as zf:  # zipfile cannot encrypt: set the flag bit by hand
        for name in ("a.jpg", "b.jpg"):
            zf.writestr(name, b"x")
    data = bytearray(raw.getvalue())
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central headers
        start = 0
        while (start := data.find(signature, start)) >= 0:
            data[start + at] |= 0x1  # bit 0 of the general purpose flags: encrypted
            start += 4
    z = tmp_path / "enc.zip"
    z.write_bytes(bytes(data))
    r = run("commit", "e", "--from", str(z), rc=1)
    assert r.err == (
        f"dload: error: {z}: no files to ingest (0 without an extension or hidden, 2 skipped: "
        "2 encrypted entries (a.jpg, b.jpg): recreate the zip without a password); check the "
        "path and the --include/--exclude globs\n")


# --- 7. --meta NaN / Infinity are text, as other non-JSON values ---------------------------

def test_meta_nan_and_infinity_are_kept_as_text(run: RunFn, tmp_path: Path,
                                                local_root: str) -> None:
    d = _folder(tmp_path / "d", {"a.jpg": b"1"})
    run("commit", "m", "--from", str(d), "--meta", "note=NaN", "--meta", "limit=-Infinity",
        "--meta", "big=1e999", "--meta", "n=3", "--meta", "x=1.5")
    meta = Repository.open(local_root).manifest("m", "latest").meta
    assert {k: meta[k] for k in ("note", "limit", "big", "n", "x")} == {
        "note": "NaN", "limit": "-Infinity", "big": "1e999", "n": 3, "x": 1.5}


def test_a_bad_meta_is_refused_before_the_input_is_read(run: RunFn, tmp_path: Path) -> None:
    r = run("commit", "m", "--from", str(tmp_path / "missing"), "--meta", "novalue", rc=1)
    assert "'novalue' is not K=V" in r.err


# --- 8. a backslash in a file name: the same key from a folder and a zip --------------------

def test_a_backslash_name_gets_the_same_key_from_a_folder_and_a_zip(run: RunFn,
                                                                   tmp_path: Path) -> None:
    d = _folder(tmp_path / "d", {"a\\b.jpg": b"1"})
    z = tmp_path / "d.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a\\b.jpg", b"1")
    a = run("commit", "f", "--from", str(d), "--json").json
    b = run("commit", "f", "--from", str(z), "--json").json
    assert a["version"] == b["version"]
    assert run("head", "f", "--json").json[0]["__key__"] == "a/b"


def test_a_backslash_name_meeting_a_real_path_is_refused_naming_both(run: RunFn,
                                                                     tmp_path: Path) -> None:
    d = _folder(tmp_path / "d", {"a\\b.jpg": b"1"})
    _folder(d / "a", {"b.jpg": b"2"})
    r = run("commit", "f", "--from", str(d), rc=1)
    assert r.err == (f"dload: error: {d}: files 'a/b.jpg' and 'a\\b.jpg' both read as "
                     "'a/b.jpg' (a '\\' in a name reads as '/', as in archives); rename one of "
                     "them\n")


# --- 9. rm --version says which refs moved and which tags went -----------------------------

def _two_versions(repo: Repository) -> tuple[str, str]:
    v1 = repo.commit("p", {"k": {"txt": b"1"}}).version
    v2 = repo.commit("p", {"k": {"txt": b"2"}}).version
    repo.tag("p", "latest", "release")
    return v1, v2


def test_rm_of_the_latest_version_reports_the_ref_moves(run: RunFn, local_root: str) -> None:
    v1, v2 = _two_versions(Repository.open(local_root))
    r = run("rm", "p", "--version", "release", "--yes")
    assert r.out.splitlines() == [
        "removed 1 version of p; run `dload gc` to reclaim shard space",
        f"latest moved from {v2[:12]} to {v1[:12]}; tag release deleted (it pointed at "
        f"{v2[:12]})"]
    Repository.open(local_root).commit("p", {"k": {"txt": b"2"}})
    Repository.open(local_root).tag("p", "latest", "release")
    got = run("rm", "p", "--version", "release", "--yes", "--json").json
    assert got["refs_moved"] == {"latest": v1} and got["refs_deleted"] == ["release"]


def test_rm_asks_with_the_ref_moves_in_the_question(run: RunFn, local_root: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    v1, v2 = _two_versions(Repository.open(local_root))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    r = run("rm", "p", "--version", v2)
    assert r.out.startswith(
        f"remove version {v2} of 'p'? (latest moves from {v2[:12]} to {v1[:12]}; tag release "
        f"will be deleted (it points at {v2[:12]})) [y/N]: ")


# --- 10. a pipe or a device as --from ------------------------------------------------------

def test_a_pipe_or_device_as_from_says_what_it_is_and_to_save_it(run: RunFn,
                                                                  tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run("commit", "p", "--from", str(fifo), rc=1)
    assert r.err == (
        f"dload: error: {str(fifo)!r} is a pipe (as `<(cmd)` gives), not a regular file; an "
        "input is read more than once (listed, checked, then read), so save it to a file first "
        "(e.g. `cmd > data.tar`) and give that file\n")
    r = run("commit", "p", "--from", os.devnull, rc=1)
    assert r.err.startswith(f"dload: error: {os.devnull!r} is a device, not a regular file;")


# --- 11. truncated, unsupported and non-tar compressed files -------------------------------

def test_a_truncated_tar_zst_is_called_truncated(run: RunFn, tmp_path: Path) -> None:
    data = _tar_bytes([(f"f{i}.bin", os.urandom(4000)) for i in range(40)])
    whole = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    cut = tmp_path / "cut.tar.zst"
    cut.write_bytes(whole[: len(whole) // 3])
    r = run("commit", "t", "--from", str(cut), rc=1)
    assert r.err.startswith(f"dload: error: {cut} is truncated: its zstd stream ends inside a "
                            "frame"), r.err
    assert r.err.endswith("; re-download or recreate the archive\n")


@pytest.mark.parametrize(("ext", "codec", "compress"), [
    ("tar.bz2", "bzip2", bz2.compress), ("tar.xz", "xz", lzma.compress)])
def test_bzip2_and_xz_are_named_as_unsupported(run: RunFn, tmp_path: Path, ext: str,
                                               codec: str, compress: object) -> None:
    f = tmp_path / f"d.{ext}"
    f.write_bytes(compress(_tar_bytes([("a.jpg", b"1")])))  # type: ignore[operator]
    r = run("commit", "t", "--from", str(f), rc=1)
    assert r.err == (
        f"dload: error: {str(f)!r} is {codec}-compressed, which is not supported (only zip, "
        "tar, tar.gz and tar.zst are read in place); recompress it as .tar.zst or .tar.gz, "
        f"e.g. `{codec} -dc d.{ext} | zstd -o data.tar.zst`\n")


def test_a_gzip_file_that_is_not_a_tar_says_so(run: RunFn, tmp_path: Path) -> None:
    f = tmp_path / "a.jpg.gz"
    f.write_bytes(gzip.compress(b"not a tar at all"))
    r = run("commit", "t", "--from", str(f), rc=1)
    assert r.err.startswith(f"dload: error: {f} is a gzip-compressed file but not a tar "
                            "archive (what it decompresses to has no tar header)"), r.err


# --- 12. init --user --project ------------------------------------------------------------

def test_init_refuses_user_and_project_together(run: RunFn, tmp_path: Path) -> None:
    r = run("init", "--user", "--project", "--root", "./r", rc=1)
    assert r.err == ("dload: error: --user and --project write different files: give one of "
                     "them (run init twice to write both) (see `dload init --help`)\n")
    assert not (Path.cwd() / "dload.toml").exists()
    assert not (tmp_path / "home" / ".config" / "dload").exists()


# --- 13. export --index -1 ----------------------------------------------------------------

def test_export_refuses_a_negative_index(run: RunFn, local_root: str) -> None:
    Repository.open(local_root).commit("e", {"a": {"txt": b"1"}, "b": {"txt": b"2"}})
    r = run("export", "e", "--index", "-1", "--to", "out", rc=1)
    assert "Invalid value for '--index': -1 is not in the range x>=0" in r.err
    assert not Path("out").exists()


# --- diff V1 V2: bare version ids name their dataset -----------------------------------------

def test_diff_takes_bare_version_ids_as_the_issue_writes_them(run: RunFn, local_root: str) -> None:
    repo = Repository.open(local_root, cache_dir=local_root + "-cache")
    v1 = repo.commit("x", [("a", {"n": 1}), ("b", {"n": 2})], progress=False)
    v2 = repo.append("x", [("c", {"n": 3})], progress=False)
    repo.commit("y", [("z", {"n": 9})], progress=False)
    out = run("diff", v1.version[:10], v2.version[:10], "--json").json
    assert (out["old"]["name"], out["old"]["version"]) == ("x", v1.version)
    assert (out["new"]["name"], out["new"]["version"]) == ("x", v2.version)
    assert out["added"] == ["c"] and out["removed"] == []
    assert run("diff", f"x@{v1.version[:8]}", v2.version[:8], "--json").json["added"] == ["c"]
    assert run("diff", v1.version, "x", "--json").json["new"]["version"] == v2.version
    r = run("diff", "0123456789ab" if not v1.version.startswith("0123") else "fedcba987654",
            "x", rc=1)
    assert "neither a dataset nor a version id" in r.err


# --- gc says what it does to the temp files of interrupted writes ----------------------------

def test_gc_reports_the_temp_files_it_removes(run: RunFn, local_root: str) -> None:
    Repository.open(local_root, cache_dir=local_root + "-cache").commit(
        "x", [("a", {"n": 1})], progress=False)
    stale = Path(local_root, "shards", "ab", f"{'ab' * 32}.parquet.tmp-0123")
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"x" * 100)
    os.utime(stale, (0, 0))
    dry = run("gc", "--dry-run")
    assert "would delete 1 temp files of interrupted writes (100 B)" in dry.out
    assert stale.exists()
    done = run("gc", "--json").json
    assert (done["temp_files"], done["temp_bytes"]) == (1, 100) and not stale.exists()


# --- a CSV appended to text columns keeps its text as written --------------------------------

def test_a_csv_appended_to_text_columns_keeps_the_text(run: RunFn, local_root: str,
                                                       tmp_path: Path) -> None:
    import pyarrow as pa

    repo = Repository.open(local_root, cache_dir=local_root + "-cache")
    repo.commit("z", pa.table({"__key__": ["a"], "zip": ["02139"], "flag": ["no"],
                               "n": pa.array([1], pa.int64())}), key="__key__",
                progress=False)
    csv = tmp_path / "more.csv"
    csv.write_text("__key__,zip,flag,n\nb,007,TRUE,2\n")  # inferred: 7, True (then "7", "true")
    run("append", "z", "--from", str(csv), "--key-column", "__key__")
    row = repo.dataset("z").get("b")
    assert (row["zip"], row["flag"], row["n"]) == ("007", "TRUE", 2)


def test_diff_reads_a_bare_token_the_same_on_either_side(run: RunFn, local_root: str) -> None:
    repo = Repository.open(local_root, cache_dir=local_root + "-cache")
    v1 = repo.commit("x", [("a", {"n": 1})], progress=False).version
    v2 = repo.append("x", [("b", {"n": 2})], progress=False).version
    name = v1[:6]  # a dataset named like a prefix of one of x's versions
    repo.commit(name, [("z", {"n": 9})], progress=False)
    for args in ((name, v2[:8]), (v2[:8], name)):
        out = run("diff", *args, "--json").json
        sides = {out["old"]["name"], out["new"]["name"]}
        assert sides == {name, "x"}  # the bare token is the dataset both times


def test_diff_of_a_bare_name_reads_its_pin_and_says_so(run: RunFn, local_root: str) -> None:
    """QA: with the dataset pinned, `diff x@first x` printed "+ 0 keys" with nothing to say
    that the bare name meant the pin, not latest."""
    repo = Repository.open(local_root, cache_dir=local_root + "-cache")
    v1 = repo.commit("x", [("a", {"n": 1})], progress=False).version
    v2 = repo.append("x", [("b", {"n": 2})], progress=False).version
    run("pin", f"x@{v1}")
    r = run("diff", f"x@{v2}", "x")
    assert r.out.splitlines()[0] == f"x@{v2[:12]} -> x@{v1[:12]} (pinned in dload.lock)"
    out = run("diff", "x", "x@latest", "--json").json
    assert out["old"]["pinned"] and not out["new"]["pinned"] and out["added"] == ["b"]
    run("unpin", "x")
    assert run("diff", f"x@{v1}", "x").out.splitlines()[0] == f"x@{v1[:12]} -> x@{v2[:12]}"
