"""The CLI's error contract: user errors exit 1 with one line and no traceback, bugs exit 2,
hostile archives write nothing anywhere, an interrupted commit resumes, Ctrl-C exits 130 and a
group without a command prints its help."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import zipfile
from pathlib import Path

import click
import pytest
import s3fs
from test_cli import DLOAD, dload

from dload_arrow.cli.main import cli, main


def _folder(base: Path, n: int = 8) -> Path:
    for i in range(n):
        (base / "f").mkdir(parents=True, exist_ok=True)
        (base / "f" / f"{i:02d}.bin").write_bytes(random.Random(i).randbytes(600))
    return base / "f"


def test_user_errors_are_one_line_exit_1(tmp_path: Path, local_root: str) -> None:
    cwd = Path.cwd()
    base = ["--root", local_root]
    r = dload("info", "nope", *base, cwd=cwd, rc=1)
    assert r.err.startswith("dload: error: no dataset 'nope'")
    corrupt = tmp_path / "broken.zip"
    with zipfile.ZipFile(corrupt, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a.txt", "A" * 3000)
        z.writestr("b.txt", "B" * 3000)
    data = bytearray(corrupt.read_bytes())
    data[data.index(b"B" * 50) + 5] ^= 1
    corrupt.write_bytes(bytes(data))
    r = dload("commit", "x", "--from", str(corrupt), *base, cwd=cwd, rc=1)
    assert "entry 'b.txt' is corrupt" in r.err
    (tmp_path / "junk.tar.gz").write_bytes(b"not gzip" * 100)
    r = dload("commit", "x", "--from", str(tmp_path / "junk.tar.gz"), *base, cwd=cwd, rc=1)
    assert "is corrupt at its first entry" in r.err
    r = dload("commit", "x", "--from", str(tmp_path / "missing"), *base, cwd=cwd, rc=1)
    assert "no file or directory" in r.err
    r = dload("commit", "Bad/Name", "--from", str(_folder(tmp_path)), *base, cwd=cwd, rc=1)
    assert "dataset name 'Bad/Name' is not allowed" in r.err
    r = dload("commit", "x", *base, cwd=cwd, rc=1)  # usage error
    assert "Missing option '--from'" in r.err and "dload commit --help" in r.err
    dload("commit", "x", "--from", str(_folder(tmp_path)), *base, cwd=cwd)
    r = dload("rm", "x", *base, cwd=cwd, rc=1)
    assert "without --yes" in r.err
    r = dload("export", "x", "--index", "99", "--to", str(tmp_path / "o"), *base, cwd=cwd, rc=1)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    assert "--help" in dload("commit", "--help", cwd=cwd).out  # and the help has an example
    assert "Example" in dload("commit", "--help", cwd=cwd).out


def test_hostile_archive_is_refused_and_writes_nothing(tmp_path: Path, local_root: str) -> None:
    cwd = Path.cwd()
    target = tmp_path / "target"
    target.mkdir()
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("ok.txt", "fine")
        z.writestr("../../escaped.txt", "pwned")
    before = sorted(p.name for p in tmp_path.parent.rglob("*"))
    r = dload("commit", "evil", "--from", str(evil), "--root", local_root, cwd=cwd, rc=1)
    assert "contains '..'" in r.err and "refusing the archive" in r.err
    assert sorted(p.name for p in tmp_path.parent.rglob("*")) == before
    assert not Path(local_root, "datasets", "evil").exists()


def test_verify_finds_a_corrupted_shard(tmp_path: Path, local_root: str) -> None:
    cwd = Path.cwd()
    dload("commit", "v", "--from", str(_folder(tmp_path)), "--root", local_root, cwd=cwd)
    shard = next(Path(local_root, "shards").rglob("*.parquet"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    r = dload("verify", "v", "--root", local_root, cwd=cwd, rc=1)
    assert "1 BAD" in r.out and "missing or corrupt" in r.err
    assert f"  BAD {shard.stem}" in r.out  # which one, by its full digest
    assert "dload verify v --delete-bad" in r.err
    # What the message says restores the version: the same-size corrupt copy blocked the
    # commit's upload (it skips shards whose object exists) until it is deleted.
    dload("commit", "v", "--from", str(_folder(tmp_path)), "--root", local_root, cwd=cwd)
    dload("verify", "v", "--root", local_root, cwd=cwd, rc=1)
    r = dload("verify", "v", "--delete-bad", "--root", local_root, "--json", cwd=cwd, rc=1)
    assert r.json["bad"][0]["deleted"] is True and not shard.exists()
    dload("commit", "v", "--from", str(_folder(tmp_path)), "--root", local_root, cwd=cwd)
    r = dload("verify", "v", "--root", local_root, cwd=cwd)
    assert "all ok" in r.out


def test_interrupted_commit_resumes_without_reuploading(
    tmp_path: Path, s3_root: str, s3_server
) -> None:
    cwd = Path.cwd()
    src = _folder(tmp_path, 24)
    args = ["commit", "big", "--from", str(src), "--root", s3_root, "--shard-size", "2KB",
            "--row-group-size", "700", "--json"]
    crashed = dload(*args, cwd=cwd, rc=-9, env={"DLOAD_CRASH_AT": "shard1"})
    assert crashed.out == ""
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    stored = len(fs.find(s3_root + "/shards/"))  # uploads cut by the kill never land
    assert stored >= 1
    assert dload("ls", "--root", s3_root, "--json", cwd=cwd).json == []  # no ref moved
    s3_server.clear()
    done = dload(*args, cwd=cwd).json
    assert done["shards"] > stored
    assert done["shards_uploaded"] == done["shards"] - stored
    assert s3_server.count("PUT", contains="/shards/", copy=False) == done["shards_uploaded"]
    r = dload("info", "nope", "--root", s3_root, cwd=cwd, rc=1)
    assert "no dataset 'nope'" in r.err


def test_internal_errors_exit_2_with_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    @click.command("boom-for-test")
    def boom() -> None:
        raise RuntimeError("unexpected")

    cli.add_command(boom)
    try:
        assert main(["boom-for-test"]) == 2
    finally:
        cli.commands.pop("boom-for-test")
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error (RuntimeError: unexpected)" in err
    assert main(["--version"]) == 0


def test_ctrl_c_during_a_command_exits_130(tmp_path: Path) -> None:
    """SIGINT while a commit waits on its source (an S3 endpoint that accepts and never
    answers): exit 130 with `dload: interrupted`, not click's Abort as exit 1."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(120)
        env = {**os.environ, "DLOAD_ENDPOINT_URL": f"http://127.0.0.1:{server.getsockname()[1]}",
               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}
        proc = subprocess.Popen(
            [DLOAD, "commit", "x", "--from", "s3://bucket/slow.zip", "--root",
             str(tmp_path / "root")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            conn, _ = server.accept()  # the command is now inside, waiting on the source
            with conn:
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "dload: interrupted" and out == ""


@pytest.mark.parametrize("args", [[], ["cache"]])
def test_a_group_without_a_command_prints_its_help_and_exits_0(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 0
    c = capsys.readouterr()
    assert c.out.startswith(f"Usage: dload {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")
    assert "Commands:" in c.out and "\n  status" in c.out and c.err == ""
    assert main([*args, "--help"]) == 0
    assert c.out == capsys.readouterr().out
