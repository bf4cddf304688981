"""``from_archive``: train straight from a zip or tar before deciding to commit it.

The pipeline's items are sample dicts (``__key__`` plus one value per column, None where a
sample lacks a file), grouped exactly as ``dload commit --from ARCHIVE`` groups them, because
both read through the same :class:`~dload_arrow.ingest.source.SampleSource`.

- zip: an indexed source. Sample ``i`` is read through the central directory (a few ranged
  reads on S3), so resuming jumps straight to the saved position and ``.get(key)`` reads one
  sample. RAM holds the central directory plus at most one chunk of samples (256).
- tar, tar.gz, tar.zst: a stream, read once per epoch; resuming replays the stream up to the
  saved position. RAM holds the entry list plus one sample.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any, overload

from dload_arrow.ingest.detect import open_archive
from dload_arrow.ingest.source import SampleSource
from dload_arrow.pipeline.sources import FromIterablePipe

__all__ = ["ArchivePipeline", "ArchiveSamples", "from_archive"]


class ArchiveSamples(Sequence[dict[str, Any]]):
    """The samples of a random-access source as a lazy, indexable sequence."""

    def __init__(self, source: SampleSource) -> None:
        self.source = source
        self._keys = source.keys()

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self.source.get(k) for k in self._keys[i]]
        return self.source.get(self._keys[i])


class ArchivePipeline(FromIterablePipe):
    """A pipeline over an archive's samples, with the archive's keys and random access."""

    def __init__(self, source: SampleSource, *, chunk: int = 1) -> None:
        items: Any = ArchiveSamples(source) if source.random_access else source
        # The fingerprint names the samples, not only the path: other globs, another split
        # or another archive at the path give other keys, and a state of one is refused by
        # the other (it would resume at the wrong position).
        keys = source.keys()
        digest = hashlib.sha256("\0".join(keys).encode()).hexdigest()[:16]
        super().__init__(items, chunk=chunk,
                         name=f"archive:{source.location}:{len(keys)}:{digest}")
        self.archive = source

    def __len__(self) -> int:
        return len(self.archive)

    def keys(self) -> list[str]:
        """Sample keys in iteration order (sorted for zip, archive order for tar)."""
        return self.archive.keys()

    @property
    def schema(self) -> Any:
        """The Arrow schema ``dload commit`` would give these samples."""
        return self.archive.schema

    @property
    def report(self) -> Any:
        """Samples, per-column counts, files that did not fit, links skipped."""
        return self.archive.report

    @property
    def finite(self) -> bool:
        return True

    def get(self, key: str) -> dict[str, Any]:
        """One sample by key (zip: read through the central directory; tar: TypeError)."""
        return self.archive.get(key)


def from_archive(
    path_or_url: str | os.PathLike[str],
    *,
    include: Sequence[str] | str = (),
    exclude: Sequence[str] | str = (),
    split: str = "last",
    endpoint_url: str | None = None,
) -> ArchivePipeline:
    """A pipeline source over the samples of a zip, tar, tar.gz or tar.zst archive.

    Args:
        path_or_url: a local path or a URL (``s3://bucket/data.zip``); never extracted.
        include: globs of files to keep, matched against the path, the file name and the
            directories on the path (``"cats"`` keeps ``cats/``); extensions compare
            case-insensitively. A glob that matches no file warns (GlobWarning).
        exclude: globs of files to drop (``"cats"`` drops everything under ``cats/``).
        split: where the extension starts in a file name: ``"last"`` dot or ``"first"``
            (webdataset).
        endpoint_url: S3 endpoint (R2, MinIO); default ``DLOAD_ENDPOINT_URL``.

    Returns:
        An :class:`ArchivePipeline`: iterate it, or chain ``.shuffle()``, ``.map()``,
        ``.batch()`` like any pipeline; ``.get(key)`` for zip archives.

    Example:
        >>> pipe = from_archive("s3://bucket/photos.zip")       # doctest: +SKIP
        >>> for sample in pipe.shuffle(1000, seed=0).batch(32): ...  # doctest: +SKIP
    """
    if not isinstance(path_or_url, str | os.PathLike):
        raise TypeError(
            f"from_archive needs a path or URL (str or pathlib.Path), got "
            f"{type(path_or_url).__name__} {path_or_url!r:.80}" + (
                "; for several archives: dl.concat([dl.from_archive(p) for p in paths]) to "
                "train, open_archives(paths) to commit" if isinstance(
                    path_or_url, list | tuple) else "")
        )
    source = open_archive(
        os.fspath(path_or_url), include=include, exclude=exclude, split=split,
        endpoint_url=endpoint_url,
    )
    source.keys()  # list and check the archive now: bad names and corruption fail here
    return ArchivePipeline(source)
