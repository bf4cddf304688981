"""A corrupt shard in a local root raises IntegrityError on every read path (QA accept57a:
streaming a local root, which reads its shards in place and never hashes them, returned a
flipped byte as data; only ``get`` and ``ds[i]`` checked the pages' CRCs)."""

from __future__ import annotations

import os
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
