"""A conditional PUT the store refused for another reason than a lost race is an error.

A QA finding: s3fs maps IncompleteBody, BadDigest, InvalidArgument, InvalidRequest,
MissingContentLength... to EINVAL, the errno of a 412, and every 409 to EBUSY. Each was taken
for "someone else wrote it first": put_if_absent returned False, a commit skipped a shard it
never stored, then blamed a gc running at the same time for deleting it. Only a 412
PreconditionFailed or a 409 ConditionalRequestConflict is a lost race. The errors are injected
by a WSGI layer in front of moto (tests/s3server.py ``fail``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3server import S3Server

from dload_arrow import Repository
from dload_arrow.errors import StorageError
from dload_arrow.storage import open_storage


@pytest.fixture
def server(s3_server: S3Server) -> Iterator[S3Server]:
    yield s3_server
    with s3_server._lock:
        s3_server.failing.clear()


@pytest.mark.parametrize(("status", "code"), [
    (400, "IncompleteBody"), (400, "BadDigest"), (400, "InvalidArgument"),
    (400, "InvalidRequest"), (411, "MissingContentLength"), (409, "OperationAborted"),
    (503, "SlowDown"),
])
def test_a_refused_conditional_put_raises_naming_the_code_and_key(
        s3_root: str, server: S3Server, status: int, code: str) -> None:
    storage = open_storage(s3_root)
    # botocore retries 5xx answers by itself: refuse every try
    server.fail("PUT", "/once/x", status, code, "the store says no", times=10)
    with pytest.raises(StorageError) as err:
        storage.put_if_absent("once/x", b"first")
    text = str(err.value)
    assert code in text and str(status) in text and "the store says no" in text
    assert f"{s3_root}/once/x" in text
    server.failing.clear()
    assert not storage.exists("once/x")
    assert storage.put_if_absent("once/x", b"first") is True  # nothing was there


def test_a_refused_compare_and_swap_raises_naming_the_code_and_key(
        s3_root: str, server: S3Server) -> None:
    storage = open_storage(s3_root)
    assert storage.put_if_absent("ref", b"v1") is True
    got = storage.read_with_token("ref")
    assert got is not None
    server.fail("PUT", "/ref", 400, "BadDigest", "Content-MD5 mismatch")
    with pytest.raises(StorageError, match=r"400 BadDigest: Content-MD5 mismatch"):
        storage.compare_and_swap("ref", b"v2", got[1])
    assert storage.read("ref") == b"v1"


@pytest.mark.parametrize(("status", "code"), [
    (412, "PreconditionFailed"), (409, "ConditionalRequestConflict"), (412, ""),
])
def test_a_lost_race_is_still_false(s3_root: str, server: S3Server, status: int,
                                    code: str) -> None:
    storage = open_storage(s3_root)
    server.fail("PUT", "/race/x", status, code)
    assert storage.put_if_absent("race/x", b"mine") is False


def test_a_commit_whose_shard_upload_is_refused_says_so_not_gc(
        s3_root: str, server: S3Server, tmp_path: Path) -> None:
    repo = Repository.open(s3_root, cache_dir=str(tmp_path / "c"), cache_budget="unlimited")
    server.fail("PUT", "/shards/", 400, "IncompleteBody",
                "You did not provide the number of bytes specified by the Content-Length")
    samples = [(f"k{i:03d}", {"x": i, "blob": os.urandom(64)}) for i in range(50)]
    with pytest.raises(StorageError) as err:
        repo.commit("d", samples, progress=False)
    text = str(err.value)
    assert "IncompleteBody" in text and "/shards/" in text and s3_root in text
    assert "gc" not in text
    assert repo.datasets() == []  # nothing published
    repo.commit("d", samples, progress=False)
    assert repo.dataset("d").num_rows == 50


def test_refused_credentials_say_to_check_them(s3_root: str, server: S3Server,
                                               tmp_path: Path) -> None:
    """QA: with a wrong key a command said only "... failed: Forbidden". Told by the store's
    answer (403, AccessDenied), not by words in the message: a dataset named "forbidden"
    that is not there is still just not there."""
    repo = Repository.open(s3_root, cache_dir=tmp_path / "c")
    repo.commit("d", [("a", {"x": 1})], progress=False)
    server.fail("GET", "/refs/latest", 403, "AccessDenied", "Access Denied", times=10)
    with pytest.raises(StorageError, match=r"failed: .*; the storage refused these "
                                           r"credentials: check them \(AWS_ACCESS_KEY_ID"):
        Repository.open(s3_root, cache_dir=tmp_path / "c").dataset("d")
    with server._lock:
        server.failing.clear()
    storage = open_storage(s3_root)
    assert storage.read_with_token("datasets/forbidden/refs/latest") is None
    assert open_storage("memory://forbidden-words/root").read_with_token("x/refs/y") is None


def test_a_status_given_as_the_code_is_said_once() -> None:
    """QA: a store whose error code is its status printed "answered 501 501: ..."."""
    from botocore.exceptions import ClientError

    from dload_arrow.storage.s3_conditional import refused_write

    e = ClientError({"Error": {"Code": "501", "Message": "Not Implemented"},
                     "ResponseMetadata": {"HTTPStatusCode": 501}}, "PutObject")
    said = str(refused_write(e, "creating", "s3://b/k"))
    assert "the store answered 501: Not Implemented." in said
