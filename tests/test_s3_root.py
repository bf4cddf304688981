"""A mistyped S3 root is an error, never an empty root (found by QA: a missing bucket listed as
"(none)" with exit 0, and a commit there failed on "no object shards/...")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dload_arrow import ConfigError, Repository, StorageError


def _missing(s3_root: str) -> str:
    return s3_root.replace("s3://test-", "s3://gone-", 1)


def test_a_missing_bucket_is_named_when_listing_and_when_committing(
        s3_root: str, cache_dir: str) -> None:
    assert Repository.open(s3_root, cache_dir=cache_dir).datasets() == []  # empty, exists
    with pytest.raises(StorageError, match=r"bucket 'gone-[^']+' does not exist at http"):
        Repository.open(_missing(s3_root), cache_dir=cache_dir).datasets()
    with pytest.raises(StorageError, match="does not exist"):
        Repository.open(_missing(s3_root), cache_dir=cache_dir).commit(
            "d", [("a", {"x": 1})], progress=False)


@pytest.mark.parametrize(("url", "match"), [
    ("s3://Bucket/root", "not a valid bucket name"),
    ("s3://ab/root", "not a valid bucket name"),
    ("s3://bucket//root", "empty, '.' or '..' segment"),
    ("s3://bucket/a/../b", "empty, '.' or '..' segment"),
])
def test_a_malformed_s3_root_is_refused_when_opened(url: str, match: str,
                                                    cache_dir: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Repository.open(url, cache_dir=cache_dir)


def test_credentials_in_a_root_url_are_refused_and_never_printed(cache_dir: str) -> None:
    with pytest.raises(ConfigError, match="credentials in the URL") as err:
        Repository.open("s3://AKIAXEXAMPLE:hunter2@bucket/root", cache_dir=cache_dir)
    assert "hunter2" not in str(err.value) and "AKIAXEXAMPLE" not in str(err.value)


def test_status_shows_the_local_cache_when_the_root_is_not_reachable(
        s3_root: str, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "dload_arrow.cli", "status", "--json", "--root",
                          _missing(s3_root), "--cache-dir", str(tmp_path / "c"),
                          "--cache-budget", "3GB"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)
    assert st["root"]["reachable"] is False
    assert st["cache"]["budget_bytes"] == 3 * 10**9 and "does not exist" in st["cache"]["error"]


def test_dload_ls_on_a_missing_bucket_exits_1(s3_root: str, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "dload_arrow.cli", "ls", "--root",
                          _missing(s3_root), "--cache-dir", str(tmp_path / "c")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "does not exist" in out.stderr and "Traceback" not in out.stderr


def test_a_missing_object_in_a_bucket_named_bucket_is_not_found(
        s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    import s3fs

    from dload_arrow import NotFoundError
    from dload_arrow.storage import open_storage

    for k, v in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    bucket = f"my-bucket-{uuid.uuid4().hex[:8]}"
    s3fs.S3FileSystem(client_kwargs={"endpoint_url": s3_server.endpoint},
                      skip_instance_cache=True).mkdir(bucket)
    storage = open_storage(f"s3://{bucket}/root", endpoint_url=s3_server.endpoint)
    storage.write("a/present", b"x")
    for call in (lambda: storage.read("a/nope"), lambda: storage.info("a/nope")):
        with pytest.raises(NotFoundError):
            call()
