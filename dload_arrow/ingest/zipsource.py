"""``ZipSource``: samples of a zip archive, read in place through its central directory.

Only the central directory (at the end of the file) and the members actually read are
fetched; on S3 each is a ranged GET. Every member is CRC-checked as it is read.
"""

from __future__ import annotations

import os
import stat
import weakref
import zipfile
import zlib
from collections.abc import Sequence
from typing import IO, Any

from dload_arrow.errors import IntegrityError
from dload_arrow.ingest.grouping import Entry, check_entry_name
from dload_arrow.ingest.location import open_binary
from dload_arrow.ingest.source import SampleSource

__all__ = ["ZipSource"]

_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError)


class ZipSource(SampleSource):
    """A zip archive, local or remote; random access by key (:meth:`get`), sorted order.

    Picklable: the file is reopened lazily in each process (DataLoader workers).
    """

    random_access = True

    def __init__(
        self,
        location: str,
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        split: str = "last",
        endpoint_url: str | None = None,
    ) -> None:
        super().__init__(location, include=include, exclude=exclude, split=split)
        self.endpoint_url = endpoint_url
        self._zip: zipfile.ZipFile | None = None
        self._file: IO[bytes] | None = None
        self._pid = -1
        self._closer: weakref.finalize[Any, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_zip=None, _file=None, _pid=-1, _closer=None)
        return state

    @property
    def zip(self) -> zipfile.ZipFile:
        if self._zip is None or self._pid != os.getpid():
            self._file, _ = open_binary(
                self.location, endpoint_url=self.endpoint_url, block_size=256 * 1024
            )
            try:
                self._zip = zipfile.ZipFile(self._file)
            except _ERRORS as e:
                self._file.close()
                raise IntegrityError(
                    f"{self.location} is not a readable zip archive ({e}); re-download or "
                    "recreate it"
                ) from e
            self._pid = os.getpid()
            # A source dropped without close() still closes its file when collected.
            self._closer = weakref.finalize(self, _close, self._zip, self._file)
        return self._zip

    def close(self) -> None:
        if self._closer is not None and self._pid == os.getpid():
            self._closer()
        self._zip = self._file = self._closer = None

    def _list(self) -> list[Entry]:
        out = []
        for info in self.zip.infolist():
            name = check_entry_name(info.filename, self.location)
            # Unix file types live in the high 16 bits (only meaningful from Unix zippers).
            ftype = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
            if info.is_dir() or not name:
                continue
            if ftype == stat.S_IFLNK:
                self._skipped.append((name, "symbolic link (not followed)"))
            elif ftype and ftype != stat.S_IFREG:
                self._skipped.append((name, "not a regular file"))
            elif info.flag_bits & 0x1:
                self._skipped.append((name, "encrypted"))
            else:
                out.append(Entry(name, info.file_size, info.filename))
        return out

    def _read(self, entry: Entry) -> bytes:
        try:
            return self.zip.read(entry.ref)
        except _ERRORS as e:
            raise IntegrityError(
                f"{self.location}: entry {entry.name!r} is corrupt or unreadable ({e}); "
                "re-download or recreate the archive"
            ) from e


def _close(archive: zipfile.ZipFile, file: IO[bytes]) -> None:
    archive.close()
    file.close()
