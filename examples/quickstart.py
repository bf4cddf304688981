"""Quickstart: commit samples, recommit for free, list versions, tag and pin.

Runs on the embedded default root (a local directory) or wherever DLOAD_ROOT points:

    python examples/quickstart.py
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dload_arrow import Repository


def samples(n: int, offset: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
    rng = np.random.default_rng(0)
    for i in range(offset, offset + n):
        yield f"sample-{i:05d}", {
            "label": i % 10,
            "caption": f"a picture of the number {i % 10}",
            "image": rng.integers(0, 255, size=(8, 8), dtype=np.uint8),  # a tensor column
            "jpeg": bytes(rng.integers(0, 255, size=64, dtype=np.uint8)),  # a binary blob
        }


def main() -> None:
    repo = Repository.open()
    print(f"root: {repo.storage.url}")

    v1 = repo.commit("quickstart", samples(500), meta={"source": "synthetic"},
                     recipe=Path(__file__).read_text(), progress=False)
    print(f"committed {v1.num_rows} samples as {v1.version[:12]} "
          f"({v1.shards_uploaded} shards, {v1.bytes_uploaded} bytes uploaded)")

    # The same samples give the same bytes, the same id, and nothing to upload.
    again = repo.commit("quickstart", samples(500), meta={"source": "synthetic"},
                        recipe=Path(__file__).read_text(), progress=False)
    assert again.version == v1.version and again.bytes_uploaded == 0
    print(f"recommitted: same id {again.version[:12]}, {again.bytes_uploaded} bytes uploaded")

    # Append makes a new version that reuses the first version's shards.
    v2 = repo.append("quickstart", samples(100, offset=500), progress=False)
    print(f"appended: {v2.version[:12]} has {v2.num_rows} rows, "
          f"uploaded {v2.shards_uploaded} new shard(s)")

    for info in repo.versions("quickstart"):
        print(f"  {info.version[:12]} rows={info.num_rows} refs={list(info.refs)}")

    repo.tag("quickstart", v1.version[:12], "first")
    assert repo.dataset("quickstart", "first").version == v1.version

    # Pin the experiment to v1: dataset() then ignores newer commits until unpinned.
    made_lock = not Path("dload.lock").exists()  # pin writes ./dload.lock (or the nearest)
    repo.pin("quickstart", v1.version)
    ds = repo.dataset("quickstart")
    assert ds.version == v1.version
    print(f"pinned: {ds!r}, schema columns {ds.schema.names}")
    repo.unpin("quickstart")
    assert repo.dataset("quickstart").version == v2.version
    if made_lock:  # leave no empty lock file behind in the directory this ran from
        Path("dload.lock").unlink(missing_ok=True)

    # Sample dicts (the key in __key__, as samples() yields them) commit too; with the
    # dataset's schema, a read commits back to the very same version id.
    first = repo.dataset("quickstart", "first")
    copy = repo.commit("quickstart", first.samples(), schema=first.schema,
                       meta={"source": "synthetic"}, recipe=Path(__file__).read_text(),
                       progress=False)
    assert copy.version == v1.version
    print(f"samples() committed back: {copy.version[:12]} (the first version's id)")


if __name__ == "__main__":
    main()
