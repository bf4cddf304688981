"""A cache disk that fills up mid-epoch (another program writes to it): the look-ahead drops
its shard, the reader evicts and retries, and a download the disk cannot take names the cache
directory and the fix, never the root it came from.

The full disk is real. The cache's ``shards/`` folder is a tiny tmpfs mounted in a user and
mount namespace of its own (``unshare -rm``, no privileges needed where the kernel allows
it): the cache measures the free space of the directory that holds ``shards/``, so it admits
downloads that the tmpfs then refuses with ENOSPC, as a disk filled by someone else after
admission does. A file size limit (RLIMIT_FSIZE, EFBIG) makes the same refusal everywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dload_arrow import Repository

_READ = textwrap.dedent("""
    import os, sys
    from dload_arrow import Repository, StorageError
    root, cache, prefetch, fsize = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if fsize:
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
    repo = Repository.open(root, cache_dir=cache, cache_budget="unlimited")
    try:
        print("rows", sum(b.num_rows for b in repo.dataset("d").batches(prefetch=prefetch)))
    except StorageError as e:
        print("error", e)
    temps = [f for _d, _s, fs in os.walk(os.path.join(cache, "shards")) for f in fs
             if ".tmp-" in f]
    print("temps", len(temps))
""")


def _commit(root: str, tmp_path: Path) -> list[int]:
    """Dataset ``d``: 1,200 rows in shards of about 110 KB (incompressible); their sizes."""
    writer = Repository.open(root, cache_dir=str(tmp_path / "w"), cache_budget="unlimited")
    samples = [(f"k{i:05d}", {"x": i, "blob": os.urandom(200)}) for i in range(1200)]
    writer.commit("d", samples, shard_size=25_000, row_group_size=100, progress=False)
    return [s.bytes for s in writer.manifest("d").shards]


def _namespaces_work(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    mnt = tmp_path / "probe"
    mnt.mkdir()
    probe = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "tmpfs", str(mnt)],
                           capture_output=True)
    return probe.returncode == 0


def _read(root: str, cache: Path, *, prefetch: int, tmpfs: int = 0, fsize: int = 0) -> str:
    """Read every row of ``d`` in a subprocess; with ``tmpfs``, ``cache/shards`` is a tmpfs
    of that many bytes. Its output: rows or the error, then the temp files left behind."""
    cache.mkdir()
    cmd = [sys.executable, "-c", _READ, root, str(cache), str(prefetch), str(fsize)]
    if tmpfs:
        (cache / "shards").mkdir()
        mount = f"mount -t tmpfs -o size={tmpfs} tmpfs {cache / 'shards'}"
        cmd = ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"', "sh", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_an_epoch_goes_on_when_the_cache_disk_fills_under_its_look_ahead(
        s3_root: str, tmp_path: Path) -> None:
    if not _namespaces_work(tmp_path):
        pytest.skip("no unprivileged user and mount namespaces here (unshare -rm)")
    sizes = _commit(s3_root, tmp_path)
    # Room for one and a half shards: the downloads ahead and the reader's own collide.
    out = _read(s3_root, tmp_path / "cache", prefetch=3, tmpfs=max(sizes) * 3 // 2)
    assert out.split("\n")[:2] == ["rows 1200", "temps 0"], out


def test_a_shard_the_full_cache_disk_refuses_names_the_cache_dir_and_the_fix(
        s3_root: str, tmp_path: Path) -> None:
    if not _namespaces_work(tmp_path):
        pytest.skip("no unprivileged user and mount namespaces here (unshare -rm)")
    sizes = _commit(s3_root, tmp_path)
    cache = tmp_path / "cache"
    out = _read(s3_root, cache, prefetch=2, tmpfs=min(sizes) // 2)
    error, temps = out.split("\n")[:2]
    assert error.startswith("error cannot write shard "), out
    assert f"into the cache {cache}: the local disk is full" in error
    for fix in ("Free space on that disk", "cache_budget", "cache_dir"):
        assert fix in error
    assert "s3://" not in error
    assert temps == "temps 0"


def test_a_shard_over_the_file_size_limit_names_the_cache_dir(
        s3_root: str, tmp_path: Path) -> None:
    sizes = _commit(s3_root, tmp_path)
    cache = tmp_path / "cache"
    out = _read(s3_root, cache, prefetch=2, fsize=min(sizes) // 2)
    error, temps = out.split("\n")[:2]
    assert error.startswith("error cannot write shard "), out
    assert f"into the cache {cache}: a file of " in error
    assert "ulimit -f" in error and "cache_dir" in error and "s3://" not in error
    assert temps == "temps 0"
