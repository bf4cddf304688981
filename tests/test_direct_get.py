"""Hashed downloads (shards) straight over http.client (storage/http_get.py), against real
servers: one presigned GET, the same bytes and digest as through s3fs, and s3fs whenever the
direct way does not apply or fails before the body."""

from __future__ import annotations

import hashlib
import os
import queue
import ssl
from pathlib import Path
from typing import Any

import pytest
from s3server import S3Server

import dload_arrow.storage.http_get as http_get
from dload_arrow.storage import open_storage
from dload_arrow.storage.http_get import direct_get, presigned_url


@pytest.fixture(params=["s3", pytest.param("seaweed", marks=pytest.mark.integration)])
def s3_storage(request: pytest.FixtureRequest) -> Any:
    return open_storage(request.getfixturevalue(f"{request.param}_root"))


def _located(storage: Any, path: str) -> tuple[Any, str, str]:
    fs = storage.fs
    bucket, key, _ = fs.split_path(storage._full(path))
    return fs, bucket, key


def _stored(s3_root: str, s3_server: S3Server, path: str, size: int) -> tuple[Any, bytes]:
    """A storage on the test server holding ``size`` random bytes at ``path``; log cleared."""
    storage = open_storage(s3_root)
    data = os.urandom(size)
    storage.write(path, data)
    s3_server.clear()
    return storage, data


def _check_download(storage: Any, path: str, data: bytes, dest: Path) -> None:
    digest = hashlib.sha256()
    assert storage.download(path, str(dest), digest) == len(data)
    assert dest.read_bytes() == data
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_direct_get_writes_and_hands_over_every_byte_in_order(
        s3_storage: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_get, "BUFFER_SIZE", 64 * 1024)  # several buffers, a partial last
    data = os.urandom(5 * 64 * 1024 + 1234)
    s3_storage.write("direct/obj", data)
    fs, bucket, key = _located(s3_storage, "direct/obj")
    url = presigned_url(fs, bucket, key, None)
    # SigV4 (botocore presigns SigV2 unless configured otherwise; AWS refuses SigV2 for
    # buckets made since 2020)
    assert url is not None and "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url
    digest = hashlib.sha256()
    sizes: list[int] = []

    def hand_over(piece: memoryview, free: queue.Queue[bytearray]) -> None:
        digest.update(piece)
        sizes.append(len(piece))
        free.put(piece.obj)  # type: ignore[arg-type]

    dest = tmp_path / "obj"
    with open(dest, "wb", buffering=0) as f:
        assert direct_get(fs, url, f.fileno(), hand_over) == (len(data), True, 200)
    assert dest.read_bytes() == data
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    assert len(sizes) == 6 and set(sizes[:-1]) == {64 * 1024}


def test_a_shard_download_is_one_presigned_get(s3_server: S3Server, s3_root: str,
                                               tmp_path: Path) -> None:
    storage, data = _stored(s3_root, s3_server, "direct/shard", 200_000)
    _check_download(storage, "direct/shard", data, tmp_path / "s")
    gets = s3_server.gets("direct/shard")
    assert len(gets) == 1 and gets[0].range is None and "Signature=" in gets[0].query
    # Not hashed (refs, manifests): through s3fs's pooled connections, as before.
    s3_server.clear()
    assert storage.download("direct/shard", str(tmp_path / "t")) == len(data)
    gets = s3_server.gets("direct/shard")
    assert len(gets) == 1 and "Signature=" not in gets[0].query


def test_a_torn_download_is_resumed_by_s3fs_from_the_first_missing_byte(
        s3_server: S3Server, s3_root: str, tmp_path: Path) -> None:
    storage, data = _stored(s3_root, s3_server, "dl/torn.bin", 1_000_000)
    s3_server.tear("dl/torn.bin", 200_000)
    _check_download(storage, "dl/torn.bin", data, tmp_path / "torn.bin")
    first, resumed = s3_server.gets("torn.bin")
    assert first.range is None and "Signature=" in first.query  # direct, torn
    assert resumed.range is not None and resumed.range.startswith("bytes=")
    assert "Signature=" not in resumed.query  # s3fs
    assert 0 < int(resumed.range[6:].rstrip("-")) <= 200_000


def test_a_refused_presigned_get_falls_back_to_the_s3_client(
        s3_server: S3Server, s3_root: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    storage, data = _stored(s3_root, s3_server, "direct/refused", 100_000)
    # the filesystem is shared by the tests' roots: its mark is undone after this test
    monkeypatch.setattr(storage.fs, "_dload_no_direct", False, raising=False)
    s3_server.refuse_signed = "direct/refused"
    _check_download(storage, "direct/refused", data, tmp_path / "r")
    assert [(r.status, "Signature=" in r.query, r.range)
            for r in s3_server.gets("direct/refused")] == [(403, True, None), (200, False, None)]
    # An endpoint that refused a presigned GET is not asked again (say one that takes only
    # another signature version): the next download goes through s3fs at once.
    s3_server.clear()
    _check_download(storage, "direct/refused", data, tmp_path / "again")
    assert ["Signature=" in r.query for r in s3_server.gets("direct/refused")] == [False]


def test_a_proxy_in_the_environment_leaves_downloads_to_the_s3_client(
        s3_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = open_storage(s3_root)
    storage.write("direct/p", b"x")
    fs, bucket, key = _located(storage, "direct/p")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert presigned_url(fs, bucket, key, None) is None  # http.client would not use it
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert presigned_url(fs, bucket, key, None) is not None  # bypassed for this host


def test_extra_request_parameters_leave_downloads_to_the_s3_client(s3_server: S3Server) -> None:
    import s3fs

    opts = {"endpoint_url": s3_server.endpoint}
    payer = s3fs.S3FileSystem(requester_pays=True, client_kwargs=opts, skip_instance_cache=True)
    sse = s3fs.S3FileSystem(client_kwargs=opts, skip_instance_cache=True,
                            s3_additional_kwargs={"SSECustomerAlgorithm": "AES256"})
    proxied = s3fs.S3FileSystem(client_kwargs=opts, skip_instance_cache=True,
                                config_kwargs={"proxies": {"http": "http://127.0.0.1:9"}})
    for fs in (payer, sse, proxied):
        assert presigned_url(fs, "bucket", "key", None) is None


def test_tls_follows_the_clients_verify_setting(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    class Fs:
        def __init__(self, **client: Any) -> None:
            self.client_kwargs = client
            self.config_kwargs: dict[str, Any] = {}

    assert http_get._tls(Fs(verify=False)).verify_mode == ssl.CERT_NONE
    assert http_get._tls(Fs()).verify_mode == ssl.CERT_REQUIRED
    # A CA bundle that cannot be read: nothing is sent, s3fs will report the problem.
    monkeypatch.setenv("AWS_CA_BUNDLE", str(tmp_path / "missing.pem"))
    dest = tmp_path / "never"
    with open(dest, "wb", buffering=0) as f:
        assert direct_get(Fs(), "https://127.0.0.1:9/b/k?Signature=x", f.fileno(), None) == (
            0, False, 0)


def test_direct_gets_can_be_turned_off(s3_server: S3Server, s3_root: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.errors import StorageError

    storage = open_storage(s3_root)
    storage.write("direct/off", b"abc" * 1000)
    s3_server.clear()
    monkeypatch.setenv("DLOAD_DIRECT_GET", "0")
    assert storage.download("direct/off", str(tmp_path / "o"), hashlib.sha256()) == 3000
    (get,) = s3_server.gets("direct/off")
    assert "Signature=" not in get.query
    monkeypatch.setenv("DLOAD_DIRECT_GET", "sometimes")
    with pytest.raises(StorageError, match=r"DLOAD_DIRECT_GET='sometimes': use 1 .* or 0"):
        storage.download("direct/off", str(tmp_path / "p"), hashlib.sha256())


def test_an_empty_object_downloads_directly(s3_server: S3Server, s3_root: str,
                                            tmp_path: Path) -> None:
    storage = open_storage(s3_root)
    storage.write("direct/empty", b"")
    s3_server.clear()
    digest = hashlib.sha256()
    dest = tmp_path / "e"
    assert storage.download("direct/empty", str(dest), digest) == 0
    assert dest.read_bytes() == b"" and digest.hexdigest() == hashlib.sha256().hexdigest()
    (get,) = s3_server.gets("direct/empty")
    assert "Signature=" in get.query


def test_a_local_write_error_is_raised_not_retried(s3_server: S3Server, s3_root: str) -> None:
    from dload_arrow.errors import StorageError

    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    storage = open_storage(s3_root)
    storage.write("direct/full", os.urandom(50_000))
    s3_server.clear()
    with pytest.raises(StorageError, match="No space left on device"):
        storage.download("direct/full", "/dev/full", hashlib.sha256())
    gets = s3_server.gets("direct/full")
    assert len(gets) == 1  # a full disk is not a torn transfer: no second request


def test_a_read_is_one_get_and_no_head(s3_server: S3Server, s3_root: str) -> None:
    # s3fs's cat_file asked for the size first: a HEAD before every manifest read.
    storage = open_storage(s3_root)
    storage.write("direct/manifest", b"m" * 5000)
    s3_server.clear()
    assert storage.read("direct/manifest") == b"m" * 5000
    assert s3_server.count("HEAD", "direct/manifest") == 0
    assert s3_server.count("GET", "direct/manifest") == 1


@pytest.mark.integration
def test_seaweedfs_checks_the_sigv4_presigned_signature(seaweed_root: str,
                                                        tmp_path: Path) -> None:
    # SeaweedFS verifies signatures (moto does not): the URL is accepted as signed, and the
    # same URL with its signature changed is refused, with nothing written.
    storage = open_storage(seaweed_root)
    storage.write("direct/signed", b"s" * 1000)
    fs, bucket, key = _located(storage, "direct/signed")
    url = presigned_url(fs, bucket, key, None)
    assert url is not None
    sig = url.rsplit("X-Amz-Signature=", 1)[1]
    forged = url.replace(sig, "0" * len(sig))
    with open(tmp_path / "a", "wb", buffering=0) as f:
        assert direct_get(fs, url, f.fileno(), None) == (1000, True, 200)
    with open(tmp_path / "b", "wb", buffering=0) as f:
        got = direct_get(fs, forged, f.fileno(), None)
    assert got.written == 0 and not got.done and got.status == 403
