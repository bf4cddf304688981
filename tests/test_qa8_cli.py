"""`dload` CLI findings of the eighth QA pass (issue 7): `init` and the lines of an existing
config file, the fix for skipped links and encrypted entries, `diff` with a mistyped name, and
`recipe` written verbatim into a file.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from cli_run import RunFn, runner


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], local_root: str) -> RunFn:
    return runner(capsys, ["--root", local_root])


@pytest.fixture
def bare(capsys: pytest.CaptureFixture[str]) -> RunFn:
    """`dload` without --root (which is also an option of `init`)."""
    return runner(capsys)


# --- 6. init keeps the file's other lines and says what the file holds ----------------------

def test_init_changes_only_the_keys_given_and_keeps_comments_and_other_lines(
        bare: RunFn) -> None:
    toml = Path("dload.toml")
    toml.write_text('# my notes\n\ncache_budget = 100  # small disk\nroot = "./r"\n')
    r = bare("init", "--project", "--cache-budget", "200MB", "--endpoint-url", "http://h:9000")
    assert toml.read_text() == ('# my notes\n\ncache_budget = "200MB"  # small disk\n'
                                'root = "./r"\nendpoint_url = "http://h:9000"\n')
    assert r.out == (f"wrote {toml.absolute()}: set cache_budget=200MB, "
                     "endpoint_url=http://h:9000; kept root=./r\n")
    j = bare("init", "--project", "--root", "./s", "--json").json
    assert j["settings"] == {"cache_budget": "200MB", "root": "./s",
                             "endpoint_url": "http://h:9000"}
    assert j["set"] == ["root"]
    assert toml.read_text().startswith('# my notes\n\ncache_budget = "200MB"  # small disk\n'
                                       'root = "./s"\n')
    assert bare("status", "--json").json["settings"]["root"]["source"] == str(toml.absolute())


def test_init_refuses_a_file_with_unknown_keys_naming_them_and_writes_nothing(
        bare: RunFn) -> None:
    toml = Path("dload.toml")
    before = '# my notes\nextra = "keepme"\n[tool]\nx = 1\n'
    toml.write_text(before)
    r = bare("init", "--project", "--cache-budget", "200MB", "--json", rc=1)
    assert r.out == "" and toml.read_text() == before
    assert json.loads(r.err)["error"]["kind"] == "config"
    assert json.loads(r.err)["error"]["message"].startswith(
        f"{toml.absolute()} holds keys dload does not read: "
                            "extra, tool (known keys: root, cache_dir, cache_budget, "
                            "endpoint_url)")
    assert "Nothing was written: remove those keys" in r.err


def test_init_will_not_guess_at_a_value_spanning_lines(bare: RunFn) -> None:
    toml = Path("dload.toml")
    before = 'root = """\n/x"""\n'
    toml.write_text(before)
    r = bare("init", "--project", "--root", "/y", rc=1)
    assert "cannot set root in" in r.err and "edit the file by hand" in r.err
    assert toml.read_text() == before


# --- 8. skipped links and encrypted entries come with their fix, once per reason ------------

def _encrypted_zip(path: Path, names: list[str]) -> Path:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w") as zf:  # zipfile cannot encrypt: set the flag bit by hand
        for name in names:
            zf.writestr(name, b"x")
        zf.writestr("plain.txt", b"y")
    data = bytearray(raw.getvalue())
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central headers
        start = 0
        while (start := data.find(signature, start)) >= 0:
            # every entry but the last (plain.txt) gets bit 0 of its flags: encrypted
            if data.find(b"plain.txt", start, start + 64) < 0:
                data[start + at] |= 0x1
            start += 4
    path.write_bytes(bytes(data))
    return path


def test_skipped_symbolic_links_are_reported_with_the_fix_once(run: RunFn,
                                                               tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.jpg").write_bytes(b"1")
    for i in range(5):
        os.symlink("a.jpg", d / f"l{i}.jpg")
    err = run("commit", "s", "--from", str(d)).err
    assert err.splitlines() == [
        "skipped 5 symbolic links, not followed (l0.jpg, l1.jpg, l2.jpg, ...): copy the files "
        "they point to in their place (a tar: recreate it with `tar --dereference`)",
        "(the names of all 5 skipped: --json)"]


def test_skipped_tar_links_and_encrypted_entries_say_how_to_fix_them(run: RunFn,
                                                                     tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        info = tarfile.TarInfo("a.txt")
        info.size = 5
        tf.addfile(info, io.BytesIO(b"hello"))
        link = tarfile.TarInfo("c.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "a.txt"
        tf.addfile(link)
    (tmp_path / "links.tar").write_bytes(raw.getvalue())
    err = run("commit", "l", "--from", str(tmp_path / "links.tar")).err
    assert err == ("skipped 1 symbolic link, not followed (c.txt): copy the files they point "
                   "to in their place (a tar: recreate it with `tar --dereference`)\n")
    z = _encrypted_zip(tmp_path / "enc.zip", ["d.txt", "e.txt"])
    assert run("commit", "e", "--from", str(z)).err == (
        "skipped 2 encrypted entries (d.txt, e.txt): recreate the zip without a password\n")
    skipped = run("commit", "e", "--from", str(z), "--json").json["source"]["skipped"]
    assert skipped == [{"name": "d.txt", "reason": "encrypted"},
                       {"name": "e.txt", "reason": "encrypted"}]


# --- 9. diff with a mistyped bare name --------------------------------------------------------

def test_diff_with_a_mistyped_name_says_no_dataset_and_suggests_the_close_one(
        run: RunFn, tmp_path: Path) -> None:
    d = tmp_path / "src"
    d.mkdir()
    (d / "a.txt").write_text("x")
    run("commit", "photos", "--from", str(d))
    for args in (("photos", "photoz"), ("photoz", "photos")):
        err = run("diff", *args, rc=1).err
        assert err.startswith("dload: error: no dataset 'photoz' under file://")
        assert "Did you mean 'photos'?" in err and "NAME@TAG" in err
    # what `dload info photoz` says, word for word, up to the tag hint
    info = run("info", "photoz", rc=1).err
    assert run("diff", "photos", "photoz", rc=1).err.startswith(info.rstrip("\n"))
    # a hex token could be a version id: still reported as neither
    assert "neither a dataset nor a version id" in run("diff", "photos", "beef", rc=1).err


# --- 11. recipe > make.py is verbatim ---------------------------------------------------------

def test_recipe_into_a_file_adds_no_newline(run: RunFn, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    d = tmp_path / "src"
    d.mkdir()
    (d / "a.txt").write_text("x")
    text = 'print("no trailing newline")\x1b'
    (tmp_path / "make.py").write_text(text)
    run("commit", "r", "--from", str(d), "--recipe", str(tmp_path / "make.py"))
    assert run("recipe", "r").out == text
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal: the prompt's line
    assert run("recipe", "r").out == text + "\n"


def test_ctrl_c_while_the_cli_loads_is_interrupted_not_a_traceback(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    dload = str(Path(sys.executable).with_name("dload"))
    codes = []
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8):  # while pyarrow, click... load
        p = subprocess.Popen([dload, "ls", "--root", str(tmp_path / "r")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=60)
        codes.append(p.returncode)
        if p.returncode == -signal.SIGINT and not err:  # before Python set its handler (a
            continue  # loaded machine starts slowly): the OS ended it, nothing printed
        if err.startswith("Exception ignored in") and p.returncode in (1, 130):
            continue  # Python swallowed the signal in an import lock's callback (and said so
            # itself); the CLI then ran on: nothing of ours to check in that run
        if "Traceback" in err:  # before the CLI's first line ran: while Python starts and
            # imports the entry point's modules (20-50 ms, more on a loaded machine)
            ours = [line for line in err.splitlines() if "dload_arrow" in line
                    and line.lstrip().startswith("File ")]
            assert all(line.endswith("in <module>") for line in ours), err
            assert err.rstrip().endswith("KeyboardInterrupt"), err
            continue
        assert p.returncode in (1, 130), (p.returncode, err)  # 1: ls ran (no such root)
        if p.returncode == 130:
            assert err.strip().splitlines()[-1] == "dload: interrupted"
    assert 130 in codes


def test_ctrl_c_that_python_wrapped_in_another_error_is_still_interrupted(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A SIGINT while a lazy import defines a dataclass surfaces as RuntimeError("Error calling
    __set_name__ ...") caused by the KeyboardInterrupt (seen in CI): exit 130, no traceback."""
    from dload_arrow.cli import main as cli_main

    def interrupted(*_a: object, **_k: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from e

    monkeypatch.setattr(cli_main.cli, "main", interrupted)
    assert cli_main.main(["ls"]) == 130
    err = capsys.readouterr().err
    assert err == "dload: interrupted\n"

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("a real bug")

    monkeypatch.setattr(cli_main.cli, "main", broken)
    assert cli_main.main(["ls"]) == 2  # a bug stays a bug
