"""A corrupt shard in a local root raises IntegrityError on every read path (QA accept57a:
streaming a local root, which reads its shards in place and never hashes them, returned a
flipped byte as data; only ``get`` and ``ds[i]`` checked the pages' CRCs)."""

from __future__ import annotations

import contextlib
import os
import random
from pathlib import Path
from typing import Any

import pytest

from dload_arrow import IntegrityError, Repository

READS: dict[str, Any] = {
    "to_arrow": lambda ds: ds.to_arrow(),
    "samples": lambda ds: list(ds.samples()),
    "batches": lambda ds: list(ds.batches()),
    "windowed shuffle": lambda ds: list(ds.shuffle(60, seed=0)),
    "full shuffle": lambda ds: list(ds.shuffle(full=True, seed=0)),
    "pipeline": lambda ds: list(ds.pipeline().batch(7)),
}


@pytest.fixture(scope="module")
def corrupt_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = str(tmp_path_factory.mktemp("crc") / "root")
    repo = Repository.open(root)
    v = repo.commit("d", [(f"k{i:03d}", {"blob": bytes([i]) * 1000}) for i in range(100)],
                    row_group_size="20KB", progress=False)
    digest = repo.manifest("d", v.version).digests()[0]
    path = Path(root, "shards", digest[:2], f"{digest}.parquet")
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x01  # inside a page of a middle row group: still decodes
    os.chmod(path, 0o644)
    path.write_bytes(bytes(data))
    return root


@pytest.mark.parametrize("how", list(READS))
def test_a_flipped_byte_in_a_local_shard_is_refused(corrupt_root: str, tmp_path: Path,
                                                    how: str) -> None:
    ds = Repository.open(corrupt_root, cache_dir=tmp_path / "c").dataset("d")
    with pytest.raises(IntegrityError, match=r"shard [0-9a-f]{12} of dataset 'd' .* is "
                                             r"corrupt .*CRC"):
        READS[how](ds)


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x01
    tmp = path.with_suffix(".new")
    tmp.write_bytes(bytes(data))
    os.replace(tmp, path)  # another file (inode, mtime), as a copy over it makes


def test_a_shard_read_whole_once_is_marked_and_a_changed_file_is_checked_again(
        tmp_path: Path) -> None:
    root, cache = tmp_path / "root", tmp_path / "cache"
    repo = Repository.open(root, cache_dir=cache)
    v = repo.commit("d", [(f"k{i:03d}", {"blob": bytes([i]) * 1000, "n": i})
                          for i in range(100)], row_group_size="20KB", progress=False)
    digest = repo.manifest("d", v.version).digests()[0]
    marker = cache / "verified" / digest[:2] / digest
    ds = repo.dataset("d")
    ds.to_arrow(columns=["blob"])  # a projection leaves other columns' pages unchecked
    assert not marker.exists()
    assert len(list(ds.shuffle(60, seed=0))) == 100  # every row group, every column
    assert marker.exists()
    _flip(root / "shards" / digest[:2] / f"{digest}.parquet")
    with pytest.raises(IntegrityError, match="is corrupt"):
        Repository.open(root, cache_dir=cache).dataset("d").to_arrow()


def test_cache_clear_removes_the_marks(tmp_path: Path) -> None:
    repo = Repository.open(tmp_path / "root", cache_dir=tmp_path / "cache")
    repo.commit("d", [(f"k{i}", {"n": i}) for i in range(10)], progress=False)
    list(repo.dataset("d").samples())
    assert list((tmp_path / "cache" / "verified").rglob("*"))
    repo.cache_clear()
    assert not [p for p in (tmp_path / "cache" / "verified").rglob("*") if p.is_file()]


def test_a_copy_over_the_file_keeping_its_mtime_is_checked_again(tmp_path: Path) -> None:
    """QA review57: ``cp -p`` writes into the same inode and sets the old mtime back; the
    marker held size, mtime and inode only, so the corrupt copy skipped its check."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    repo = Repository.open(root, cache_dir=cache)
    rnd = random.Random(0)  # incompressible: a flipped byte still decodes, only the CRC tells
    v = repo.commit("d", [(f"k{i:03d}", {"blob": rnd.randbytes(1000)}) for i in range(100)],
                    row_group_size="20KB", progress=False)
    digest = repo.manifest("d", v.version).digests()[0]
    path = root / "shards" / digest[:2] / f"{digest}.parquet"
    list(repo.dataset("d").samples())
    assert (cache / "verified" / digest[:2] / digest).exists()
    before = os.stat(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    os.chmod(path, 0o644)
    with open(path, "r+b") as f:  # the same inode, as cp -p over it
        f.write(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_ino == before.st_ino
    with pytest.raises(IntegrityError, match="is corrupt"):
        Repository.open(root, cache_dir=cache).dataset("d").to_arrow()


def test_no_marker_for_a_file_replaced_while_it_was_read(tmp_path: Path) -> None:
    """QA review57: a file replaced during a whole read was marked with the new file's
    stamp, though the old one was checked; the corrupt new one then skipped its check."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    repo = Repository.open(root, cache_dir=cache)
    rnd = random.Random(0)
    v = repo.commit("d", [(f"k{i:03d}", {"blob": rnd.randbytes(1000)}) for i in range(100)],
                    row_group_size="20KB", progress=False)
    digest = repo.manifest("d", v.version).digests()[0]
    it = repo.dataset("d").batches()
    next(it)  # the read has the good file open
    _flip(root / "shards" / digest[:2] / f"{digest}.parquet")
    # it finishes on its mapping of the good file, or a decoding thread opens the new one
    with contextlib.suppress(IntegrityError):  # and finds it corrupt at once
        list(it)
    with pytest.raises(IntegrityError, match="is corrupt"):
        Repository.open(root, cache_dir=cache).dataset("d").to_arrow()


_FOOTER_FLIP = """
import os, random, sys
from pathlib import Path
from dload_arrow import IntegrityError, Repository
root = Path(sys.argv[1])
repo = Repository.open(root / "root", cache_dir=root / "c0")
rnd = random.Random(0)
rows = [(f"k{i:03d}", {"n": rnd.randrange(1 << 40), "s": f"text-{rnd.random()}",
                       "b": rnd.randbytes(20), "f": rnd.random()}) for i in range(60)]
v = repo.commit("d", rows, row_group_size="2KB", progress=False)
digest = repo.manifest("d", v.version).digests()[0]
path = root / "root" / "shards" / digest[:2] / f"{digest}.parquet"
os.chmod(path, 0o644)
want = repo.dataset("d").to_arrow()
b = bytearray(path.read_bytes()); b[len(b) - int(sys.argv[2])] ^= 0x10
path.write_bytes(bytes(b))
ds = Repository.open(root / "root", cache_dir=root / "c1").dataset("d")
try:
    how = sys.argv[3]
    got = (ds.to_arrow() if how == "stream" else ds.to_arrow(columns=["n"])
           if how == "columns" else ds.get("k030") if how == "get" else ds[5])
    if how == "stream":
        print("no error" if got.equals(want) else "WRONG DATA")
    elif how == "columns":
        print("no error" if got.equals(want.select(["__key__", "n"])) else "WRONG DATA")
    else:
        print("no error")
except IntegrityError as e:
    print("IntegrityError", e)
"""


@pytest.mark.parametrize(("offset", "how", "said"), [
    (2050, "stream", "row group 0 does not decode"),  # a column renamed: a bare KeyError
    (2055, "get", "does not match its manifest"),  # the same, by random access
    (2055, "item", "does not match its manifest"),
    (2038, "stream", "row group 0 does not decode"),  # aborted the process (pyarrow, C++)
    (1698, "columns", ""),  # aborted it too, from a column the projection left out
    (1012, "stream", "its footer's row counts are not the manifest's"),  # rows lost silently
    (145, "stream", "its footer does not parse"),  # ArrowNotImplementedError
])
def test_a_garbled_footer_is_an_integrity_error_never_an_abort(
        tmp_path: Path, offset: int, how: str, said: str) -> None:
    """QA review57, review57b: one flipped byte in a local shard's footer aborted the process
    inside pyarrow, raised a bare KeyError, or dropped rows without a word. (In a subprocess,
    in case one still aborts; the offsets are where this pyarrow lays the footer out.)"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FOOTER_FLIP, str(tmp_path), str(offset), how],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    if said:
        assert out.stdout.startswith("IntegrityError shard "), (out.stdout, out.stderr[-1500:])
        assert said in out.stdout
    else:  # a flip in a column not read: right data, or an IntegrityError
        assert out.stdout.startswith(("no error", "IntegrityError shard ")), out.stdout
