"""Open a local file or a remote object (``s3://...``) as a seekable binary file.

Remote objects go through the storage layer (which alone knows endpoints and credentials):
every read is one ranged GET of at least one block, so a zip's central directory or one
member costs a few small requests, never a download of the whole archive. A remote folder
(a prefix holding objects) is refused with what to do instead: reading one is not supported.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Iterable
from typing import IO

from dload_arrow.errors import ConfigError, NotFoundError, StorageError
from dload_arrow.storage import Storage, open_storage, redact_url
from dload_arrow.storage.remote import FsspecStorage

__all__ = ["RangeReader", "is_remote", "local_path", "open_binary", "own_dirs", "refuse_own_data"]

_BUCKET_SCHEMES = ("s3", "s3a", "gs", "gcs")  # URLs whose first path part is a bucket


def is_remote(location: str) -> bool:
    """Whether ``location`` is a URL other than ``file://``."""
    return "://" in location and not location.startswith("file://")


def local_path(location: str) -> str:
    """The path of a local ``location``: a ``file://`` URL's path, else ``location``."""
    return location[len("file://") :] if location.startswith("file://") else location


class RangeReader(io.RawIOBase):
    """A read-only, seekable raw file over one object of a :class:`Storage`."""

    def __init__(self, storage: Storage, path: str, size: int) -> None:
        super().__init__()
        self.storage = storage
        self.path = path
        self.size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        end = min(self._pos + len(buffer), self.size)
        if end <= self._pos:
            return 0
        data = self.storage.read_range(self.path, self._pos, end)
        n = len(data)
        buffer[:n] = data
        self._pos += n
        return n


def open_binary(
    location: str, *, endpoint_url: str | None = None, block_size: int = 1 << 20
) -> tuple[IO[bytes], int]:
    """A buffered, seekable binary file over ``location`` and its size in bytes.

    Args:
        location: a local path, ``file://`` URL, or a URL of any storage scheme (``s3://``).
        endpoint_url: S3 endpoint for R2/MinIO (default: the resolved setting or
            ``DLOAD_ENDPOINT_URL``).
        block_size: bytes fetched per remote read.
    """
    if not is_remote(location):
        path = local_path(location)
        if os.path.isdir(path):
            raise ConfigError(
                f"{location!r} is a directory, not a file: read its files with --as files, "
                "a folder of tables with --as table, or drop --as to detect it"
            )
        if not os.path.isfile(path):
            if os.path.exists(path):
                raise _not_regular(location, os.stat(path).st_mode)
            raise NotFoundError(f"no file {location!r}; check the path")
        return open(path, "rb"), os.path.getsize(path)
    scheme, _, path = location.partition("://")
    if scheme in ("http", "https"):
        how = ("its files first and give their folder" if location.endswith("/") else
               f"the file first (curl -LO '{location}') and give its local path")
        raise ConfigError(
            f"cannot read {location!r}: dload does not download from http(s) URLs; download "
            f"{how}, or copy it to S3 and give its s3:// URL")
    if scheme in _BUCKET_SCHEMES and "/" not in path.strip("/"):
        raise _bucket_only(location, scheme, path.strip("/"))
    parent, _, name = location.rstrip("/").rpartition("/")
    try:
        storage = open_storage(parent, endpoint_url=endpoint_url)
        # The user's object, not a file of a root: 'my photos.zip' is read as it is named.
        if isinstance(storage, FsspecStorage):
            storage.input_object = True
        size = storage.info(name).size
        # A prefix ("folder") stats as an empty object: only a listing tells them apart.
        inside = [o.path for o in storage.list(name)] if size == 0 else []
    except NotFoundError as e:
        raise NotFoundError(f"no object {redact_url(location)!r}; check the URL") from e
    except (StorageError, ConfigError) as e:
        raise _about_input(e, parent, location) from e
    inside = [p for p in inside if p.startswith(name + "/")]
    if inside:
        raise _remote_folder(location, inside)
    raw = RangeReader(storage, name, size)
    return io.BufferedReader(raw, buffer_size=block_size), size


def _bucket_only(location: str, scheme: str, bucket: str) -> ConfigError:
    """The error of a remote input naming a bucket (``s3://bucket``) without an object key."""
    bucket = bucket or "BUCKET"
    return ConfigError(
        f"{redact_url(location)!r} names a bucket, not an object: give the key of one archive "
        f"or table file in it, e.g. {scheme}://{bucket}/path/data.tar or "
        f"{scheme}://{bucket}/path/table.parquet (a folder, a prefix holding objects, is not "
        "supported yet: download it and commit the local folder)"
    )


def _not_regular(location: str, mode: int) -> ConfigError:
    """The error of a path that exists but is no regular file: a pipe (``<(...)``), a device."""
    what = ("a pipe (as `<(cmd)` gives)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device")
    return ConfigError(
        f"{location!r} is {what}, not a regular file; an input is read more than once (listed, "
        "checked, then read), so save it to a file first (e.g. `cmd > data.tar`) and give "
        "that file"
    )


def _remote_folder(location: str, inside: list[str]) -> ConfigError:
    """The error of a remote folder as ``--from``: not read yet, and the ways around it."""
    from dload_arrow.ingest.kinds import TABLE_FORMATS  # kinds imports this module

    url = redact_url(location).rstrip("/")
    base = url.rsplit("/", 1)[-1]
    if any(p.endswith("/refs/latest") and "/datasets/" in f"/{p}" for p in inside):
        root = url.removesuffix("/datasets")  # (--from ROOT/datasets/: the root is above)
        return ConfigError(  # (QA errors61: the hint named one of its manifests)
            f"{url + '/'!r} is a dload root or its datasets/ folder: its files are manifests "
            f"and shards, not samples; list its datasets with `dload ls --root {root}`, and "
            "commit a dataset's rows elsewhere with `dload export` or repo.derive()")
    tables = [p for p in inside if p.lower().endswith(tuple(TABLE_FORMATS))
              and "/manifests/" not in p]
    single = "a single archive or table file"
    if tables:
        single = f"a single table file in it (e.g. {url}/{tables[0].split('/', 1)[1]})"
    download = f"aws s3 sync {url}/ ./{base}" if url.startswith("s3://") else "any client"
    return ConfigError(
        f"{url + '/'!r} is a folder ({len(inside)} objects); folders on remote storage are not "
        f"supported yet: download it ({download}) and commit the local folder, pack it into "
        f"one archive (.zip, .tar, .tar.gz or .tar.zst) and commit that, or point --from at "
        f"{single}"
    )


def _about_input(e: StorageError | ConfigError, parent: str, location: str) -> Exception:
    """``e`` reworded to name the input object: the storage layer speaks of "the root"."""
    text = str(e)
    for prefix in (f"root {redact_url(parent)}: ", f"root {redact_url(parent)!r}: "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    text = text.replace("check the root URL", "check the URL")
    return type(e)(f"cannot read {redact_url(location)}: {text}")

# dload's own folders (a local storage root's ``datasets/``, ``shards/`` and ``.locks/``, the
# cache) are never read as a user's samples or table rows: not when ``--from`` points into
# one, and not when a folder being read holds one (a root kept beside its data: ``root =
# "data/store"`` with ``--from data``). A second run of the same commit read the root's
# manifests beside a table's files, took the folder for files and published one blob (QA
# ingest 42).


def own_dirs(dirs: Iterable[str | os.PathLike[str]] | str | os.PathLike[str] | None
             ) -> frozenset[str]:
    """The real paths of dload's own folders, as a walk compares them; one folder given as a
    str or path is one folder (not its characters: QA api55, the walk read the folder)."""
    if dirs is None:
        return frozenset()
    if isinstance(dirs, str | os.PathLike):
        dirs = [dirs]
    if isinstance(dirs, bytes) or not isinstance(dirs, Iterable):
        raise TypeError(f"store_dirs= takes folders (a str or path, or a list of them), got "
                        f"{type(dirs).__name__} {dirs!r:.80}")
    out = []
    for d in dirs:
        if not isinstance(d, str | os.PathLike):
            raise TypeError(f"store_dirs= takes folders as str or path, got "
                            f"{type(d).__name__} {d!r:.80}")
        out.append(os.path.realpath(os.fspath(d)))
    return frozenset(out)


def refuse_own_remote(locations: Iterable[str], root_url: str) -> None:
    """Raise ConfigError when a remote ``--from`` lies in a remote root's own ``datasets/``
    or ``shards/`` (as :func:`refuse_own_data` does for a local one; QA errors61: S3 took a
    manifest as a table)."""
    for location in locations:
        scheme, _, rest = location.partition("://")  # s3://b/root//datasets: the same folder
        location = f"{scheme}://{re.sub('/+', '/', rest)}" if rest else location
        for d in ("datasets", "shards"):
            prefix = f"{root_url.rstrip('/')}/{d}"
            if location.rstrip("/") == prefix or location.startswith(prefix + "/"):
                raise ConfigError(
                    f"{redact_url(location)!r} is in {redact_url(prefix)}/, one of the folders "
                    "where dload keeps its own data (a storage root's datasets/ or shards/): "
                    "its files are manifests and shards, not samples; point --from at your "
                    "files")


def refuse_own_data(location: str, path: str, dirs: frozenset[str]) -> None:
    """Raise ConfigError when ``path`` (``location`` as given) is one of ``dirs`` or inside one."""
    real = os.path.realpath(path)
    for d in sorted(dirs):
        if real == d or real.startswith(d + os.sep):
            where = "is" if real == d else f"is inside {d}, which is"
            raise ConfigError(
                f"{location!r} {where} one of the folders where dload keeps its own data (a "
                "storage root's datasets/ or shards/, or the cache): its files are manifests "
                "and shards, not samples; point --from at the folder of your files")
