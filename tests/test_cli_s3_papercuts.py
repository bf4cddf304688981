"""CLI papercuts around S3 roots and inputs (a QA pass):

- ``dload status`` showed ``endpoint_url - default`` while botocore used AWS_ENDPOINT_URL;
- ``--from s3://bucket`` (no key) said "no object" although the bucket holds objects;
- a mistyped S3 root prefix listed as an empty root, ``(none)``, with nothing more said.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import s3fs
from cli_run import RunFn, runner
from s3server import S3Server


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> RunFn:
    return runner(capsys)


@pytest.fixture
def no_endpoint_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_status_shows_the_endpoint_botocore_reads_from_the_environment(
        local_root: str, run: RunFn, no_endpoint_env: pytest.MonkeyPatch) -> None:
    def endpoint() -> dict[str, str | None]:
        got: dict[str, str | None] = run("status", "--root", local_root,
                                         "--json").json["settings"]["endpoint_url"]
        return got

    assert endpoint() == {"value": None, "source": "default"}
    no_endpoint_env.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    assert endpoint() == {"value": "http://127.0.0.1:9000",
                          "source": "env AWS_ENDPOINT_URL (read by botocore)"}
    line = run("status", "--root", local_root).out.splitlines()[4]
    assert line.split() == ["endpoint_url", "http://127.0.0.1:9000", "env", "AWS_ENDPOINT_URL",
                            "(read", "by", "botocore)"]
    no_endpoint_env.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9001")  # botocore's order
    assert endpoint()["value"] == "http://127.0.0.1:9001"
    no_endpoint_env.setenv("DLOAD_ENDPOINT_URL", "http://127.0.0.1:9002")  # ours wins
    assert endpoint() == {"value": "http://127.0.0.1:9002", "source": "env"}
    no_endpoint_env.delenv("DLOAD_ENDPOINT_URL")
    no_endpoint_env.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert endpoint() == {"value": None, "source": "default"}


def test_from_a_bucket_without_a_key_asks_for_the_key(
        s3_root: str, s3_server: S3Server, local_root: str, run: RunFn) -> None:
    bucket = s3_root.split("/")[2]
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                           skip_instance_cache=True)
    fs.pipe(f"{bucket}/data/t.csv", b"x,y\n1,2\n")
    for src in (f"s3://{bucket}", f"s3://{bucket}/"):
        err = run("commit", "d", "--from", src, "--root", local_root, rc=1).err
        assert "names a bucket, not an object" in err and "no object" not in err
        assert f"s3://{bucket}/path/" in err
    run("commit", "d", "--from", f"s3://{bucket}/data/t.csv", "--root", local_root)


def test_ls_of_a_root_without_datasets_says_what_that_may_mean(
        s3_root: str, tmp_path: Path, run: RunFn) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    run("commit", "d", "--from", str(folder), "--root", s3_root)
    assert run("ls", "--root", s3_root).err == ""
    typo = s3_root + "x"
    r = run("ls", "--root", typo)  # exit 0: an empty prefix may be a root not created yet
    assert r.out == "(none)\n"
    assert f"no datasets under {typo} (from --root)" in r.err
    assert "holds no dload_arrow root" in r.err and "DLOAD_ROOT" in r.err
    assert run("ls", "--root", typo, "--json").json == []
    assert "holds no dload_arrow root" in run("status", "--root", typo).out
    empty = tmp_path / "empty"
    os.mkdir(empty)  # an existing local directory says the same (a missing one is an error)
    assert f"no datasets under {empty} (from --root)" in run("ls", "--root", str(empty)).err


def test_status_reports_credentials_and_endpoint_botocore_reads_from_its_config_file(
        s3_root: str, run: RunFn, tmp_path: Path, no_endpoint_env: pytest.MonkeyPatch,
        s3_server: S3Server) -> None:
    """QA env53: with keys and endpoint_url in ~/.aws/config (or an instance role, SSO...),
    reads worked while status said "credentials: NONE found" and "endpoint_url -"."""
    config = tmp_path / "aws-config"
    config.write_text("[default]\naws_access_key_id = testing\naws_secret_access_key = "
                      f"testing\nregion = us-east-1\nendpoint_url = {s3_server.endpoint}\n")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "DLOAD_ENDPOINT_URL",
                "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        no_endpoint_env.delenv(var, raising=False)
    no_endpoint_env.setenv("AWS_CONFIG_FILE", str(config))
    no_endpoint_env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    got = run("status", "--root", s3_root, "--json").json
    assert got["root"]["reachable"] is True
    assert got["credentials"] == {"needed": True, "present": True, "from": [str(config)]}
    assert got["settings"]["endpoint_url"] == {
        "value": s3_server.endpoint, "source": f"{config} (read by botocore)"}
    no_endpoint_env.setenv("AWS_PROFILE", "nope")  # a profile that is not there: said so
    text = run("status", "--root", s3_root).out
    assert "credentials: NONE found (The config profile (nope) could not be found)" in text


def test_missing_credentials_and_a_missing_endpoint_are_named_with_the_fix(
        s3_root: str, run: RunFn, tmp_path: Path, no_endpoint_env: pytest.MonkeyPatch) -> None:
    """QA env53: "listing 'datasets/' ... failed: Unable to locate credentials", no fix said
    (refused credentials had one); and AWS unreachable from an offline node, no endpoint set."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                "AWS_SESSION_TOKEN"):
        no_endpoint_env.delenv(var, raising=False)
    no_endpoint_env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    no_endpoint_env.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    done = subprocess.run([sys.executable, "-m", "dload_arrow.cli", "ls", "--root", s3_root],
                          capture_output=True, text=True, timeout=120)  # (no cached client)
    err = done.stderr
    assert done.returncode == 1 and "Unable to locate credentials" in err
    assert "no credentials were found: set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY" in err

    from botocore.exceptions import EndpointConnectionError

    from dload_arrow.storage.s3_root import NO_ENDPOINT, failure_hint
    offline = EndpointConnectionError(endpoint_url="https://bkt.s3.amazonaws.com/")
    wrapped = OSError(str(offline))
    wrapped.__cause__ = offline
    assert failure_hint(wrapped, endpoint_set=False) == NO_ENDPOINT
    assert failure_hint(wrapped, endpoint_set=True).startswith(  # (QA errors61)
        "is the server up at that address? It comes from DLOAD_ENDPOINT_URL")
