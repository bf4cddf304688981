"""CLI edges found by review: what a command reports after removing a dataset's last version,
secrets in error text, roots a command cannot keep, unreadable config files, and terminal
control characters in the data."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest
from cli_run import RunFn, runner

from dload_arrow.storage.base import redact_text


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


def _folder(tmp_path: Path, names: dict[str, bytes]) -> str:
    src = tmp_path / "src"
    src.mkdir()
    for name, data in names.items():
        (src / name).write_bytes(data)
    return str(src)


def test_removing_the_only_version_reports_it_removed(run: RunFn, tmp_path: Path) -> None:
    run("commit", "one", "--from", _folder(tmp_path, {"a.txt": b"x"}))
    r = run("rm", "one", "--version", "latest", "--yes", "--json")
    assert len(r.json["removed"]) == 1 and r.json["refs_deleted"] == ["latest"]
    assert "(none)" in run("ls").out


def test_head_escapes_control_characters(run: RunFn, tmp_path: Path) -> None:
    run("commit", "c", "--from", _folder(tmp_path, {"k\x1b[2J.txt": b"red\x1b[31m\rover\ttab"}))
    out = run("head", "c").out
    assert "\x1b" not in out and "\r" not in out and "\t" not in out
    assert "k\\x1b[2J" in out and "red\\x1b[31m\\rover\\ttab" in out


def test_a_memory_root_is_refused_by_the_cli(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    run = runner(capsys)
    r = run("commit", "q", "--from", _folder(tmp_path, {"a.txt": b"x"}), "--root", "memory://x",
            rc=1)
    assert "gone when it exits" in r.err


@pytest.mark.parametrize("name", ["dload.toml", "dload.lock"])
def test_a_settings_file_that_is_not_utf8_is_a_user_error(
        run: RunFn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    run("commit", "one", "--from", _folder(tmp_path, {"a.txt": b"x"}))
    (tmp_path / name).write_bytes(b'root = "\xff"\n' if name == "dload.toml" else b"\xff")
    monkeypatch.chdir(tmp_path)
    r = run("ls", rc=1)
    assert f"cannot read {'config file ' if name == 'dload.toml' else ''}" in r.err
    assert "utf-8" in r.err


def test_a_roots_secret_is_scrubbed_from_any_error_text() -> None:
    url = "http://user:PWSECRET@127.0.0.1:1/y"
    said = redact_text("user:PWSECRET@127.0.0.1:1/y/datasets and http://a:b@host/x", url)
    assert "PWSECRET" not in said and ":b@" not in said
    assert said == "***@127.0.0.1:1/y/datasets and http://***@host/x"
    assert redact_text("plain", "s3://bucket/x") == "plain"


def test_an_early_corrupt_byte_in_a_tar_gz_is_called_corrupt(run: RunFn, tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for i in range(20):
            data = os.urandom(4000)
            info = tarfile.TarInfo(f"s{i:02d}.bin")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    packed = bytearray(gzip.compress(raw.getvalue()))
    packed[30] ^= 0xFF
    (tmp_path / "early.tar.gz").write_bytes(bytes(packed))
    r = run("commit", "x", "--from", str(tmp_path / "early.tar.gz"), rc=1)
    assert "is corrupt" in r.err and "not a tar" not in r.err
    # a gzip file that holds no tar is still told apart
    (tmp_path / "plain.gz").write_bytes(gzip.compress(os.urandom(5000)))
    (tmp_path / "plain.tar.gz").write_bytes((tmp_path / "plain.gz").read_bytes())
    r = run("commit", "x", "--from", str(tmp_path / "plain.tar.gz"), rc=1)
    assert "not a tar archive" in r.err


@pytest.mark.parametrize(("args", "words"), [
    (["--root", ""], "--root is empty"),
    (["--root", "s3://AKID:PWSECRET@bucket/x"], "holds credentials"),
    (["--root", "s3://b/x"], "is not a valid bucket name"),
    (["--root", "nosuchscheme://x/y"], "is not a storage this machine can open"),
    (["--endpoint-url", "notaurl"], "is not an http(s) URL"),
])
def test_init_refuses_what_every_command_would_refuse(
        capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    from dload_arrow.config import user_config_path

    r = runner(capsys)("init", *args, rc=1)
    assert words in r.err and "PWSECRET" not in r.err
    assert not user_config_path().exists()  # nothing written


def test_init_says_when_it_changed_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    run = runner(capsys)
    assert run("init", "--root", "s3://bucket/x").out.startswith("wrote ")
    assert "unchanged: it holds root=s3://bucket/x" in run("init", "--root", "s3://bucket/x").out


def test_a_delete_the_root_refuses_says_what_and_why(tmp_path: Path) -> None:
    from dload_arrow.errors import StorageError
    from dload_arrow.storage import LocalStorage

    storage = LocalStorage(str(tmp_path / "root"))
    (tmp_path / "root" / "datasets" / "x" / "refs" / "latest").mkdir(parents=True)
    with pytest.raises(StorageError, match=r"cannot delete 'datasets/x/refs/latest' in root"):
        storage.delete("datasets/x/refs/latest")  # a folder: unlink fails (EISDIR)
    storage.delete("datasets/x/refs/absent")  # nothing there: nothing to do


def test_versions_of_name_at_version_says_what_it_takes(run: RunFn, tmp_path: Path) -> None:
    run("commit", "photos", "--from", _folder(tmp_path, {"a.txt": b"x"}))
    r = run("versions", "photos@nope", rc=1)
    assert "versions takes a dataset NAME, not NAME@VERSION" in r.err
    assert "younger than 1 s" in run("gc", "--grace", "1").out


def test_sql_prints_intervals_readably_and_lists_as_strict_json(run: RunFn, tmp_path: Path) -> None:
    import json

    run("commit", "one", "--from", _folder(tmp_path, {"a.txt": b"x"}))
    q = ("SELECT [1.5, 'nan'::double] AS l, to_milliseconds(5500) AS i, "
         "INTERVAL '1 month 2 days 3 hours' AS j")
    csv_out = run("sql", q, "--csv").out.splitlines()
    assert csv_out[1] == '"[1.5, null]",0:00:05.500000,1 month 2 days 3:00:00'
    assert "0:00:05.500000" in run("sql", q).out
    got = json.loads(run("sql", q, "--json").out)[0]
    assert got["i"] == {"months": 0, "days": 0, "nanoseconds": 5_500_000_000}
    assert got["l"] == [1.5, None]


def test_the_upload_line_says_when_it_includes_the_key_index(run: RunFn, tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("id,n\nb,1\na,2\n")  # b before a: keys out of order
    out = run("commit", "u", "--from", str(tmp_path / "x.csv"), "--key-column", "id").out
    assert "with the key index" in out


def test_init_that_cannot_write_its_file_says_which_and_the_way_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """QA env53: an unwritable folder gave a bare "[Errno 13] Permission denied: ..."."""
    plain = runner(capsys)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dload.toml").mkdir()  # no file can be written there
    err = plain("init", "--project", "--cache-budget", "5GB", rc=1).err
    # a dload.toml that is a directory is refused by every command (QA cfg56), init too
    assert f"{tmp_path / 'dload.toml'} is a directory, not a file" in err
    assert "delete it" in err and "Errno" not in err
    (tmp_path / "dload.toml").rmdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "dload.toml").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert "is a directory" in plain("status", rc=1).err
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "afile"))
    err = plain("init", "--cache-budget", "5GB", rc=1).err
    assert "cannot write the user config" in err and "use --project" in err
