"""Synthetic data for ``dload demo``: image-like files in a folder and in a tar.zst archive.

Each sample is three files, as a real image dataset on disk would be: ``<key>.npy`` (a
3x16x16 uint8 "image" whose pattern depends on its class), ``<key>.cls`` (the class) and
``<key>.txt`` (a caption). Everything is drawn from fixed seeds, so the demo commits the same
bytes, and gets the same version ids, on every machine.
"""

from __future__ import annotations

import io
import os
import tarfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CLASSES", "write_archive", "write_folder"]

CLASSES = ("stripes", "checks", "dots", "gradient")
SIZE = 16


def _image(rng: np.random.Generator, label: int) -> np.ndarray:
    import numpy as np

    y, x = np.mgrid[0:SIZE, 0:SIZE]
    pattern = [(x // 2) % 2, ((x // 4) + (y // 4)) % 2, ((x % 4 == 0) & (y % 4 == 0)), x / SIZE]
    base = np.asarray(pattern[label], dtype=np.float32) * 200
    noise = rng.normal(0, 25, size=(3, SIZE, SIZE))
    return np.clip(base[None] + noise + 20, 0, 255).astype(np.uint8)


def _files(seed: int, n: int, prefix: str) -> list[tuple[str, bytes]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = int(rng.integers(0, len(CLASSES)))
        buf = io.BytesIO()
        np.save(buf, _image(rng, label), allow_pickle=False)
        key = f"{prefix}/{CLASSES[label]}/{i:05d}"
        out += [
            (f"{key}.npy", buf.getvalue()),
            (f"{key}.cls", str(label).encode()),
            (f"{key}.txt", f"a {SIZE}x{SIZE} picture of {CLASSES[label]}".encode()),
        ]
    return out


def write_folder(path: str, n: int, seed: int = 0) -> int:
    """Write ``n`` samples as files under ``path``; return the bytes written."""
    total = 0
    for name, data in _files(seed, n, "train"):
        full = os.path.join(path, *name.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        total += len(data)
    return total


def write_archive(path: str, n: int, seed: int = 1) -> int:
    """Write ``n`` samples into a tar.zst at ``path`` (entries sorted); return its size."""
    import zstandard

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in sorted(_files(seed, n, "extra")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0  # reproducible archive bytes
            tf.addfile(info, io.BytesIO(data))
    with open(path, "wb") as f:
        f.write(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(raw.getvalue()))
    return os.path.getsize(path)
