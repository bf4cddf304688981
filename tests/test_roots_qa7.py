"""QA pass 7 on storage roots and the local cache: full disks, read-only roots and caches, a
relative cache dir, an endpoint that answers 404 to everything, and config warnings."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from small_disk import SmallDisk, du

from dload_arrow import Repository
from dload_arrow.errors import StorageError

DLOAD = str(Path(sys.executable).with_name("dload"))


def _limit_file_size() -> None:
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG: a disk that is full
    # for this process, without mounting one.
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))


def _unprivileged(argv: list[str]) -> list[str]:
    """``argv`` run without the root's power to ignore file modes (tests run as root in some
    containers); skips when that cannot be done."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot be enforced")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", *argv]


def _read_only(path: str) -> None:
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            p = os.path.join(folder, name)
            os.chmod(p, os.stat(p).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    os.chmod(path, 0o555)


def _writable(path: str) -> None:
    for folder, dirs, _files in os.walk(path):
        os.chmod(folder, 0o755)
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)


def test_a_local_root_whose_disk_fills_fails_with_a_user_error_and_leaves_no_temp_file(
        tmp_path: Path, local_root: str, cache_dir: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(8):
        (src / f"f{i}.bin").write_bytes(os.urandom(60_000))
    env = dict(os.environ, DLOAD_CACHE_DIR=cache_dir)
    r = subprocess.run([DLOAD, "commit", "d", "--from", str(src), "--root", local_root],
                       env=env, capture_output=True, text=True, preexec_fn=_limit_file_size)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("dload: error:") and "Traceback" not in r.stderr
    assert local_root in last and "shards/" in last and "ulimit -f" in last  # (the limit
    # this test sets is a file size's, told apart from a full disk: QA etl63)
    left = [f for _, _, fs in os.walk(local_root) for f in fs if ".tmp-" in f]
    assert left == []


def test_put_if_absent_on_a_full_disk_raises_storage_error_and_removes_its_temp_file(
        local_root: str) -> None:
    code = textwrap.dedent(f"""
        import os
        from dload_arrow.errors import StorageError
        from dload_arrow.storage import open_storage
        s = open_storage({local_root!r})
        for op in (s.put_if_absent, s.write):
            try:
                op("shards/ab/big.bin", b"x" * 400_000)
            except StorageError as e:
                assert {local_root!r} in str(e) and "shards/ab/big.bin" in str(e), e
            else:
                raise SystemExit("no error")
        print([f for _, _, fs in os.walk({local_root!r}) for f in fs])
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       preexec_fn=_limit_file_size)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_tag_on_a_read_only_local_root_says_which_root_and_how_to_fix(
        local_root: str, cache_dir: str) -> None:
    repo = Repository.open(local_root, cache_dir=cache_dir)
    repo.commit("d", [("a", {"x": 1})])
    _read_only(local_root)
    try:
        code = textwrap.dedent(f"""
            from dload_arrow import Repository
            from dload_arrow.errors import StorageError
            repo = Repository.open({local_root!r}, cache_dir={cache_dir!r})
            try:
                repo.tag("d", repo.dataset("d").version, "v1")
            except StorageError as e:
                print("StorageError:", e)
        """)
        r = subprocess.run(_unprivileged([sys.executable, "-c", code]),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("StorageError:") and local_root in r.stdout
        assert "directory you can write" in r.stdout
        cli = subprocess.run(_unprivileged([DLOAD, "tag", "d", "v1", "--root", local_root]),
                             env=dict(os.environ, DLOAD_CACHE_DIR=cache_dir),
                             capture_output=True, text=True)
        assert cli.returncode == 1 and cli.stderr.startswith("dload: error:"), cli.stderr
        assert local_root in cli.stderr and "Errno" not in cli.stderr
    finally:
        _writable(local_root)


def test_storage_error_is_raised_for_an_unwritable_lock_dir(local_root: str,
                                                           cache_dir: str) -> None:
    # a portable variant (no file modes needed): the lock folder's place is taken by a file
    repo = Repository.open(local_root, cache_dir=cache_dir)
    repo.commit("d", [("a", {"x": 1})])
    locks = Path(local_root) / ".locks"
    shutil.rmtree(locks)
    locks.write_text("")
    with pytest.raises(StorageError, match="in root"):
        repo.tag("d", repo.dataset("d").version, "v1")


def _commit_big(root: str, cache_dir: str) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    Repository.open(root, cache_dir=cache_dir + "-writer").commit(
        "big", ((f"k{i:05d}", {"b": rng.bytes(1000)}) for i in range(2000)),
        shard_size="200KB", progress=False)


@pytest.mark.parametrize("budget", ["unlimited", "10MB"])
def test_a_budget_above_the_free_disk_slides_over_data_larger_than_the_disk(
        s3_root: str, cache_dir: str, monkeypatch: pytest.MonkeyPatch, budget: str) -> None:
    _commit_big(s3_root, cache_dir)
    os.makedirs(cache_dir)
    disk = SmallDisk(cache_dir, 1_200_000)
    monkeypatch.setattr(os, "statvfs", disk)
    ds = Repository.open(s3_root, cache_dir=cache_dir, cache_budget=budget).dataset("big")
    assert ds.num_bytes > disk.capacity
    plan = ds.plan(prefetch=0)
    assert plan.feasible and plan.budget_bytes < disk.capacity
    assert "all its disk can hold" in str(plan)
    rows = 0
    for b in ds.batches(prefetch=0):
        rows += b.num_rows
        assert du(cache_dir) <= disk.capacity
    assert rows == 2000 and disk.peak <= disk.capacity


def test_when_only_the_disk_is_short_the_fixes_do_not_say_raise_the_budget(
        s3_root: str, cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dload_arrow.errors import InfeasiblePlanError

    _commit_big(s3_root, cache_dir)
    os.makedirs(cache_dir)
    monkeypatch.setattr(os, "statvfs", SmallDisk(cache_dir, 500_000))
    for budget in ("unlimited", "10MB"):
        ds = Repository.open(s3_root, cache_dir=cache_dir, cache_budget=budget).dataset("big")
        with pytest.raises(InfeasiblePlanError) as err:
            ds.plan(prefetch=3).check()
        text = str(err.value)
        assert "raise the cache budget" not in text, text
        assert "free disk space" in text and "lower prefetch" in text
    ds = Repository.open(s3_root, cache_dir=cache_dir, cache_budget="300KB").dataset("big")
    with pytest.raises(InfeasiblePlanError, match="raise the cache budget"):
        ds.plan(prefetch=3).check()


def test_a_filled_cache_this_user_cannot_write_gives_a_config_error_and_status_still_reads(
        s3_root: str, cache_dir: str) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir)
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(100)])
    repo.pull("d")
    ds = repo.dataset("d")
    ds[0]  # a footer cached too
    _read_only(cache_dir)
    try:
        code = textwrap.dedent(f"""
            from dload_arrow import Repository
            from dload_arrow.errors import ConfigError
            for budget in ("auto", "unlimited"):
                repo = Repository.open({s3_root!r}, cache_dir={cache_dir!r},
                                       cache_budget=budget)
                for what in ("stream", "ds[0]", "stream"):
                    try:
                        ds = repo.dataset("d")
                        sum(1 for _ in ds.samples()) if what == "stream" else ds[0]
                        print(what, "read")
                    except ConfigError as e:
                        print(what, "ConfigError", "cache dir" in str(e))
        """)
        r = subprocess.run(_unprivileged([sys.executable, "-c", code]),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[:-1] == [f"{w} ConfigError True" for w in
                                             ("stream", "ds[0]", "stream") * 2], r.stdout
        cli = subprocess.run(_unprivileged([DLOAD, "cache", "status", "--root", s3_root,
                                            "--cache-dir", cache_dir, "--json"]),
                             capture_output=True, text=True)
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout)["shards"] == 1
    finally:
        _writable(cache_dir)


@pytest.mark.parametrize("via_env", [False, True])
def test_a_relative_cache_dir_is_made_absolute_once_so_a_chdir_does_not_split_the_cache(
        s3_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via_env: bool) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.chdir(a)
    if via_env:
        monkeypatch.setenv("DLOAD_CACHE_DIR", "relcache")
        repo = Repository.open(s3_root)
    else:
        repo = Repository.open(s3_root, cache_dir="relcache")
    assert repo.settings.cache_dir == str(a / "relcache")
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(100)])
    ds = repo.dataset("d")
    ds[0]
    monkeypatch.chdir(b)
    assert sum(1 for _ in ds.samples()) == 100
    assert repo.cache_status().used_bytes > 0
    assert not (b / "relcache").exists()
    assert (a / "relcache" / "shards").is_dir() and (a / "relcache" / "footers").is_dir()


@pytest.mark.parametrize("overridden", [False, True])
def test_a_relative_root_in_the_user_config_warns_once_and_only_when_used(
        tmp_path: Path, overridden: bool) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "dload" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('root = "userroot"\n')
    env = dict(os.environ, DLOAD_CACHE_DIR=str(tmp_path / "cache"))
    if overridden:
        env["DLOAD_ROOT"] = str(tmp_path / "root")
    r = subprocess.run([DLOAD, "status"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("root = 'userroot'") == (0 if overridden else 1), r.stderr


class _NotFoundEverywhere(BaseHTTPRequestHandler):
    """An endpoint that is not S3 (a web server, a console port): 404 to every request."""

    def _404(self) -> None:
        self.close_connection = True
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _404

    def log_message(self, *args: object) -> None:
        pass


def test_commit_to_an_endpoint_that_answers_404_to_everything_names_the_bucket_not_an_object(
        cache_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _NotFoundEverywhere)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{srv.server_address[1]}"
        for var, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                           ("AWS_DEFAULT_REGION", "us-east-1"), ("DLOAD_ENDPOINT_URL", endpoint)):
            monkeypatch.setenv(var, value)
        repo = Repository.open("s3://nosuch-qa7/root", cache_dir=cache_dir)
        with pytest.raises(StorageError) as err:
            repo.commit("d", [("a", {"x": 1})])
        text = str(err.value)
        assert not isinstance(err.value, KeyError) and "no object" not in text
        assert "nosuch-qa7" in text and endpoint in text
    finally:
        srv.shutdown()


def test_a_cache_subfolder_this_user_cannot_write_gives_a_config_error(
        s3_root: str, cache_dir: str) -> None:
    repo = Repository.open(s3_root, cache_dir=cache_dir)
    repo.commit("d", [(f"k{i}", {"x": i}) for i in range(100)])
    repo.pull("d")
    digest = repo.dataset("d").manifest.shards[0].digest
    folder = os.path.join(cache_dir, "shards", digest[:2])
    os.remove(os.path.join(folder, f"{digest}.parquet"))  # to download again, into folder
    os.chmod(folder, 0o555)
    try:
        code = textwrap.dedent(f"""
            from dload_arrow import Repository
            from dload_arrow.errors import ConfigError
            try:
                sum(1 for _ in Repository.open({s3_root!r}, cache_dir={cache_dir!r})
                    .dataset("d").samples())
                print("read")
            except ConfigError as e:
                print("ConfigError", {folder!r} in str(e), "cache dir" in str(e))
        """)
        r = subprocess.run(_unprivileged([sys.executable, "-c", code]),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["ConfigError", "True", "True"], r.stdout
    finally:
        _writable(cache_dir)


def test_an_http_root_is_refused_with_where_the_address_goes(tmp_path: Path) -> None:
    """QA: --root http://host/x failed later with "listing 'datasets/' ... failed: host/x";
    an http(s) URL is read-only (and most often an S3 server's endpoint written as the root)."""
    from dload_arrow.errors import ConfigError

    with pytest.raises(ConfigError, match=r"an http\(s\) URL is read-only.*endpoint_url"):
        Repository.open("http://127.0.0.1:1/x", cache_dir=tmp_path / "c")


def test_an_ftp_root_takes_its_host_from_the_url_and_says_why_it_cannot_open(
        tmp_path: Path) -> None:
    """QA: an ftp:// root failed with "FTPFileSystem.__init__() missing 1 required positional
    argument: 'host'" (the URL's host was never given to fsspec) and a traceback on exit."""
    repo = Repository.open("ftp://127.0.0.1:1/data", cache_dir=tmp_path / "c")
    with pytest.raises(StorageError, match=r"cannot open the root ftp://127.0.0.1:1/data: "
                                           r".*(refused|111)") as e:
        repo.datasets()
    assert "host" not in str(e.value)
    from dload_arrow.storage import open_storage  # the path on the server: no host, no user

    ftp = open_storage("ftp://user:pw@127.0.0.1:1/data/")
    assert ftp._full("datasets/x") == "/data/datasets/x"  # type: ignore[attr-defined]


def test_conditional_writes_to_an_unreachable_endpoint_raise_storage_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """QA: a connection lost during a commit's create-if-absent or a ref's compare-and-swap
    raised botocore's EndpointConnectionError (no OSError): `dload` called it an internal
    error, with a traceback, where every other request says what failed."""
    import socket

    from dload_arrow.storage import open_storage

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = open_storage("s3://bkt/r", endpoint_url=f"http://127.0.0.1:{port}",
                     storage_options={"retries": 1})
    with pytest.raises(StorageError, match=r"creating 'shards/x' under s3://bkt/r failed: "
                                           r"Could not connect"):
        s.put_if_absent("shards/x", b"1")
    with pytest.raises(StorageError, match=r"updating 'datasets/a/refs/latest' .* failed"):
        s.compare_and_swap("datasets/a/refs/latest", b"1", "etag")


def test_credentials_in_the_endpoint_url_are_refused_without_printing_them() -> None:
    """QA: DLOAD_ENDPOINT_URL=http://user:secret@host gave botocore's "Cannot combine
    AUTHORIZATION header with AWS Query-string authentication"."""
    from dload_arrow.errors import ConfigError
    from dload_arrow.storage import open_storage

    with pytest.raises(ConfigError, match=r"holds credentials, which are not read") as e:
        open_storage("s3://b/r", endpoint_url="http://user:secret@127.0.0.1:9000")
    assert "secret" not in str(e.value) and "user" not in str(e.value)
