"""Ingest: a folder of files and a zip of them become samples; train from the zip, then commit.

Runs on the embedded default root (a local directory) or wherever DLOAD_ROOT points:

    python examples/ingest_archive.py
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path

import numpy as np

import dload_arrow as dl
from dload_arrow.ingest import open_source


def write_folder(root: Path, n: int) -> None:
    """Files as a real dataset on disk: <key>.npy (a tensor), <key>.json, <key>.txt."""
    rng = np.random.default_rng(0)
    for i in range(n):
        split = "train" if i % 5 else "val"
        stem = root / split / f"{i:04d}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        np.save(f"{stem}.npy", rng.normal(size=(4, 4)).astype(np.float32))
        Path(f"{stem}.json").write_text(json.dumps({"label": i % 3, "split": split}))
        Path(f"{stem}.txt").write_text(f"sample number {i}")
    (root / "README").write_text("files without an extension are reported, not ingested")


def main() -> None:
    repo = dl.Repository.open()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "data"
        write_folder(folder, 40)

        # 1. A directory: one sample per path without extension, one column per extension.
        src = open_source(str(folder))
        print("columns:", src.schema.names, "| not ingested:", src.report.unmatched)
        v1 = repo.commit("example-files", src.reader(), progress=False)
        print(f"committed {v1.num_rows} samples as example-files@{v1.version[:12]}")

        # 2. The same files in a zip: read in place through its central directory.
        archive = Path(tmp) / "data.zip"
        with zipfile.ZipFile(archive, "w") as z:
            for f in sorted(folder.rglob("*")):
                if f.is_file():
                    z.write(f, f.relative_to(folder).as_posix())
        pipe = dl.from_archive(str(archive))
        sample = pipe.get("val/0005")  # random access by key, no extraction
        print("val/0005:", json.loads(sample["json"]), sample["npy"].shape, sample["txt"])

        # 3. Train straight from the archive: it is a pipeline source like any other.
        batches = pipe.shuffle(buffer=16, seed=0).batch(8)
        first = next(iter(batches))
        print("a shuffled batch of keys:", first["__key__"][:4], "...")

        # 4. Happy with it? Commit the archive: same samples, same version as the folder.
        v2 = repo.commit("example-files", dl.from_archive(str(archive)).archive.reader(),
                         progress=False)
        print(f"zip committed as {v2.version[:12]}: same id {v2.version == v1.version}, "
              f"{v2.bytes_uploaded} bytes uploaded")
        assert v2.version == v1.version


if __name__ == "__main__":
    main()
