"""QA security64: hostile input. A folder's file replaced, after the listing, by a symbolic
link (to a file outside the folder) or a FIFO was read through the link, or blocked the
commit forever; both are refused as a folder that changed during the commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dload_arrow as dl
from dload_arrow.ingest import open_source


@pytest.mark.parametrize("swap", ["symlink", "fifo"])
def test_a_file_swapped_after_the_listing_is_refused(tmp_path: Path, local_root: str,
                                                     swap: str) -> None:
    folder = tmp_path / "upload"
    folder.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"SECRET!!")
    for i in range(3):
        (folder / f"f{i}.bin").write_bytes(bytes(8))
    src = open_source(str(folder))
    assert src.report.samples == 3  # listed: three regular files of 8 bytes
    os.remove(folder / "f2.bin")
    if swap == "symlink":
        os.symlink(secret, folder / "f2.bin")
    else:
        os.mkfifo(folder / "f2.bin")
    repo = dl.Repository.open(local_root)
    now = "a symbolic link" if swap == "symlink" else "not a regular file"
    with pytest.raises(dl.ConflictError, match=f"was a file when listed and is now {now}"):
        repo.commit("up", src)  # (a FIFO: refused at once, not a commit waiting forever)
    assert repo.datasets() == []


def test_a_shard_swapped_for_another_of_the_same_rows_is_refused(local_root: str) -> None:
    """A local root's shard file overwritten with another shard of the same row counts (its
    pages pass their CRCs) was read as that shard's rows by every read path; its size is not
    the manifest's."""
    import shutil

    from dload_arrow.store.names import shard_path

    repo = dl.Repository.open(local_root)
    repo.commit("a", [(f"k{i:04d}", {"x": 1, "s": f"A{i}" * 3}) for i in range(200)])
    repo.commit("b", [(f"k{i:04d}", {"x": 2, "s": f"B{i}" * 3}) for i in range(200)])
    (sa,), (sb,) = (repo.dataset(n).manifest.shards for n in ("a", "b"))
    path_a = os.path.join(local_root, shard_path(sa.digest))
    shutil.copyfile(os.path.join(local_root, shard_path(sb.digest)), path_a)
    assert os.path.getsize(path_a) != sa.bytes  # (the test's premise)
    ds = dl.Repository.open(local_root).dataset("a")
    for read in (lambda: list(ds), lambda: ds[0], lambda: ds.get("k0007"), ds.to_arrow):
        with pytest.raises(dl.IntegrityError, match=r"it holds [\d,]+ bytes, where the manifest"):
            read()


@pytest.mark.parametrize("damage", ["flip", "thrift", "swap", "trunc"])
def test_random_access_to_a_damaged_remote_shard_is_an_integrity_error(
        s3_root: str, tmp_path: Path, damage: str) -> None:
    """ds.get / ds[i] on an S3 root whose shard object was damaged raised a raw ArrowInvalid
    (the CLI: an internal error) or the store's "range not satisfiable"."""
    import s3fs

    from dload_arrow.store.names import shard_path

    repo = dl.Repository.open(s3_root, cache_dir=str(tmp_path / "c1"))
    repo.commit("a", [(f"k{i:04d}", {"x": 1, "s": f"A{i}" * 3}) for i in range(300)])
    repo.commit("b", [(f"k{i:04d}", {"x": 2, "s": f"B{i}" * 3}) for i in range(300)])
    (sa,), (sb,) = (repo.dataset(n).manifest.shards for n in ("a", "b"))
    fs = s3fs.S3FileSystem(client_kwargs={"endpoint_url": os.environ["DLOAD_ENDPOINT_URL"]},
                           skip_instance_cache=True)
    key_a = f"{s3_root[5:]}/{shard_path(sa.digest)}"
    body = fs.cat_file(key_a)
    bad = {"flip": body[:-300] + bytes([body[-300] ^ 1]) + body[-299:],
           "thrift": body[:-20] + bytes(b ^ 0xFF for b in body[-20:-8]) + body[-8:],
           "swap": fs.cat_file(f"{s3_root[5:]}/{shard_path(sb.digest)}"),
           "trunc": body[:len(body) // 2]}[damage]
    assert len(bad) != len(body) or damage in ("flip", "thrift")
    fs.pipe_file(key_a, bad)
    ds = dl.Repository.open(s3_root, cache_dir=str(tmp_path / "c2")).dataset("a")
    why = ("its footer does not parse" if damage in ("flip", "thrift")  # (thrift: an OSError,
           else r"it holds [\d,]+ bytes, where")  # QA review64b)
    for read in (lambda: ds.get("k0007"), lambda: ds[3]):
        with pytest.raises(dl.IntegrityError, match=rf"is corrupt \({why}"):
            read()


def test_a_stray_folder_in_datasets_is_warned_of_and_gc_names_it(local_root: str) -> None:
    """A file manager's copy of a dataset folder (datasets/p1 copy) made `dload ls` and gc
    fail for the whole root, as if the user had typed a bad name."""
    import shutil

    repo = dl.Repository.open(local_root)
    repo.commit("p1", [("a", {"x": 1})])
    repo.commit("p2", [("a", {"x": 2})])
    shutil.copytree(os.path.join(local_root, "datasets", "p1"),
                    os.path.join(local_root, "datasets", "p1 copy"))
    with pytest.warns(UserWarning, match=r"the folder datasets/p1 copy under .* is not a "
                                         r"dataset: .*it is not listed; move it out"):
        assert repo.datasets() == ["p1", "p2"]
    with pytest.raises(dl.InvalidNameError, match=r"datasets/p1 copy .* so gc does not run"):
        repo.gc(dry_run=True)


def test_a_nul_in_an_entry_name_is_named_as_such(tmp_path: Path, local_root: str) -> None:
    import tarfile

    info = tarfile.TarInfo("p.txt")
    info.size = 1
    info.pax_headers = {"path": "photo\x00.jpg"}
    with tarfile.open(tmp_path / "nul.tar", "w", format=tarfile.PAX_FORMAT) as t:
        import io

        t.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(dl.UnsafePathError, match="holds a NUL byte"):
        dl.Repository.open(local_root).commit("n", open_source(str(tmp_path / "nul.tar")))


_UNDER_A_LIMIT = """
import resource, sys
from dload_arrow.read.memory import available_memory
vm = next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmSize'))
resource.setrlimit(resource.RLIMIT_AS, (vm + 120 * 2**20, resource.RLIM_INFINITY))
assert available_memory() <= 120 * 2**20, available_memory()
from dload_arrow.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_out_of_memory_under_ulimit_v_is_a_user_error(tmp_path: Path) -> None:
    """A sample larger than `ulimit -v` leaves was an internal error (exit 2, "this is a bug")
    with no warning first: the memory check did not see the address-space limit."""
    import json
    import subprocess
    import sys

    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "big.bin", "wb") as f:
        f.truncate(300 * 2**20)  # sparse: no disk used
    p = subprocess.run([sys.executable, "-c", _UNDER_A_LIMIT, "commit", "big",
                        "--from", str(folder), "--root", str(tmp_path / "root"), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "committing it needs about" in p.stderr  # warned before reading a byte
    error = json.loads(p.stderr.strip().splitlines()[-1])["error"]
    assert error["kind"] == "memory" and "out of memory" in error["message"]
