"""Roots reached through fsspec: S3 and S3-compatible stores, memory://, and any other scheme.

The filesystem object is built lazily and rebuilt after a fork: s3fs clients hold event loops
and connection pools that must not cross process boundaries (DataLoader workers).
"""

from __future__ import annotations

import hashlib
import os
import threading
from datetime import UTC, datetime
from typing import Any

from dload_arrow.errors import NotFoundError, StorageError
from dload_arrow.storage.base import Digest, ObjectInfo, check_relpath, redact_text, redact_url
from dload_arrow.storage.s3_conditional import lost_race, refused_write
from dload_arrow.storage.s3_get import s3_download, s3_get_object
from dload_arrow.storage.s3_root import check_s3_url, failure_hint, missing_bucket
from dload_arrow.storage.shared_fs import forget_inherited, s3_filesystem

__all__ = ["FsspecStorage"]

_MEMORY_LOCK = threading.Lock()
_WRITES = ("creating", "writing", "updating")  # _wrap's verbs for a write


class FsspecStorage:
    """Objects under ``url`` on an fsspec filesystem.

    Conditional writes: on S3 they are ``If-None-Match: *`` and ``If-Match: <etag>`` PUTs,
    which AWS, R2, MinIO, SeaweedFS and moto honour. ``memory://`` uses a process lock.
    Other schemes fall back to check-then-write, which is not safe against concurrent
    writers; ``conditional_writes`` is False for them and docs/DESIGN.md says so.
    """

    is_local = False
    #: True to read a user's own object (``--from``): its name as it is, spaces and all; a
    #: root's own files keep the safe-name rule (check_relpath) against hostile manifests.
    input_object = False

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec.core  # (binds fsspec too)

        self.url = url.rstrip("/")
        self.protocol, self._base = fsspec.core.split_protocol(self.url)
        self.protocol = self.protocol or "file"
        self._base = (self._base or "").rstrip("/")
        if self.protocol not in ("s3", "s3a", "memory", "file"):  # ftp://u@host:21/d: /d
            self._base = fsspec.get_filesystem_class(self.protocol)._strip_protocol(self.url)
        self._options = dict(storage_options or {})
        self.conditional_writes = self.protocol in ("s3", "s3a", "memory")
        self._fs: Any = None
        self._pid = -1
        self._bucket_seen = False  # an S3 listing found objects, or the bucket was checked
        if self.protocol in ("s3", "s3a"):
            check_s3_url(redact_url(self.url), self._base)

    def __repr__(self) -> str:
        return f"FsspecStorage({redact_url(self.url)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_fs": None, "_pid": -1}  # a client per process

    @property
    def fs(self) -> Any:
        if self._fs is None or self._pid != os.getpid():
            import fsspec

            if self._fs is not None:  # forked: the parent's instance is left to the parent
                forget_inherited(self._fs)

            opts = dict(self._options)
            try:
                if self.protocol in ("s3", "s3a"):
                    self._fs = s3_filesystem(opts)
                else:  # the host, port and user of ftp://, sftp://... are in the URL
                    cls = fsspec.get_filesystem_class(self.protocol)
                    opts = {**cls._get_kwargs_from_urls(self.url), **opts}
                    self._fs = fsspec.filesystem(self.protocol, **opts)
            except ImportError as e:
                raise StorageError(
                    f"the {self.protocol}:// root needs an extra package: {e}. "
                    "For S3: pip install 'dload-arrow[s3]'"
                ) from e
            except (TypeError, ValueError, OSError) as e:
                raise StorageError(
                    f"cannot open the root {redact_url(self.url)}: "
                    f"{redact_text(str(e), self.url)}") from e
            self._pid = os.getpid()
        return self._fs

    def _full(self, path: str) -> str:
        return f"{self._base}/{path if self.input_object else check_relpath(path)}"

    def _wrap(self, e: Exception, path: str, what: str) -> Exception:
        said = redact_text(str(e), self.url)
        text = said.lower()
        failed = StorageError(f"{what} {path!r} under {redact_url(self.url)} failed: {said}")
        if not isinstance(e, FileNotFoundError):
            hint = failure_hint(e, bool(self._options.get("endpoint_url")))
            return StorageError(f"{failed}; {hint}") if hint else failed
        bucket_gone = "nosuchbucket" in text or "bucket does not exist" in text
        # a 404 on a write is about where it goes: no bucket, or an endpoint that is not S3
        if self.protocol in ("s3", "s3a") and (bucket_gone or what in _WRITES):
            problem = missing_bucket(self.fs, redact_url(self.url), self._base)
            if problem is not None or bucket_gone:
                return problem or failed
        if what in _WRITES:
            return StorageError(
                f"{what} {path!r} under {redact_url(self.url)} failed: the storage answered "
                f"'not found' ({said}), so the bucket or the endpoint is wrong; check the root URL "
                "and DLOAD_ENDPOINT_URL / endpoint_url")
        return NotFoundError(f"no object {path!r} under {redact_url(self.url)}")

    def _refused(self, e: Exception, path: str, what: str) -> Exception:
        """A conditional write's failure other than a lost race (s3_conditional.py)."""
        key = redact_url(f"{self.protocol}://{self._full(path)}")
        refused = None if isinstance(e, FileNotFoundError) else refused_write(e, what, key)
        if refused is None:
            return self._wrap(e, path, what)
        return StorageError(redact_text(str(refused), self.url))

    def read(self, path: str) -> bytes:
        full = self._full(path)
        try:
            if self.protocol in ("s3", "s3a"):
                # one GET (s3fs's cat_file asks for the size first: a HEAD per read)
                return s3_get_object(self.fs, full)[0]
            return bytes(self.fs.cat_file(full))
        except Exception as e:
            raise self._wrap(e, path, "reading") from e

    def read_range(self, path: str, start: int, end: int) -> bytes:
        full = self._full(path)
        try:
            return bytes(self.fs.cat_file(full, start=start, end=end))
        except Exception as e:
            raise self._wrap(e, path, "reading a range of") from e

    def write(self, path: str, data: bytes) -> None:
        full = self._full(path)
        try:
            self.fs.pipe_file(full, data)
        except Exception as e:
            raise self._wrap(e, path, "writing") from e

    def put_if_absent(self, path: str, data: bytes | memoryview) -> bool:
        full = self._full(path)
        data = data if isinstance(data, bytes) else bytes(data)  # the clients want bytes
        if self.protocol in ("s3", "s3a"):
            try:
                self.fs.pipe_file(full, data, mode="create")
                return True
            except FileExistsError:
                return False
            except Exception as e:  # botocore's connection errors are no OSError
                if lost_race(e):
                    return False
                raise self._refused(e, path, "creating") from e
        with _MEMORY_LOCK:
            if self.fs.exists(full):
                return False
            self.write(path, data)
            return True

    def read_with_token(self, path: str) -> tuple[bytes, str] | None:
        if self.protocol in ("s3", "s3a"):
            full = self._full(path)
            try:
                return s3_get_object(self.fs, full)
            except FileNotFoundError:
                return None
            except Exception as e:
                raise self._wrap(e, path, "reading") from e
        try:
            data = self.read(path)
        except NotFoundError:
            return None
        return data, hashlib.md5(data, usedforsecurity=False).hexdigest()

    def compare_and_swap(self, path: str, data: bytes, token: str | None) -> bool:
        if token is None:
            return self.put_if_absent(path, data)
        full = self._full(path)
        if self.protocol in ("s3", "s3a"):
            try:
                self.fs.pipe_file(full, data, IfMatch=token)
                return True
            except (FileExistsError, FileNotFoundError):
                return False
            except Exception as e:  # botocore's connection errors are no OSError
                if lost_race(e):
                    return False
                raise self._refused(e, path, "updating") from e
        with _MEMORY_LOCK:
            current = self.read_with_token(path)
            if current is None or current[1] != token:
                return False
            self.write(path, data)
            return True

    def exists(self, path: str) -> bool:
        full = self._full(path)
        try:
            self.fs.invalidate_cache(full)  # a listing's cache must not answer for now
            return bool(self.fs.exists(full))
        except Exception as e:
            raise self._wrap(e, path, "checking") from e

    def touch(self, path: str) -> bool:
        full = self._full(path)
        try:
            if self.protocol in ("s3", "s3a"):
                # S3 has no "touch": a copy onto itself (metadata replaced, required for a
                # self-copy) is server-side and sets LastModified to now.
                bucket, key, _ = self.fs.split_path(full)
                self.fs.call_s3("copy_object", Bucket=bucket, Key=key,
                                CopySource={"Bucket": bucket, "Key": key},
                                MetadataDirective="REPLACE")
            elif self.protocol == "memory":
                with _MEMORY_LOCK:
                    stored = self.fs.store.get(self.fs._strip_protocol(full))
                    if stored is None:
                        return False
                    stored.created = datetime.now(tz=UTC)
            else:
                self.fs.touch(full, truncate=False)
            self.fs.invalidate_cache(full)
            return True
        except FileNotFoundError:
            return False
        except Exception as e:
            raise self._wrap(e, path, "touching") from e

    def info(self, path: str) -> ObjectInfo:
        full = self._full(path)
        try:
            self.fs.invalidate_cache(full)
            return self._to_info(self.fs.info(full))
        except Exception as e:
            raise self._wrap(e, path, "stat of") from e

    def _to_info(self, d: dict[str, Any]) -> ObjectInfo:
        name = d["name"]
        base = self._base.split("://")[-1]
        if name.startswith(base):
            rel = name[len(base) :].lstrip("/")
        else:
            rel = name.split(base + "/", 1)[-1]
        mtime = d.get("LastModified") or d.get("mtime") or d.get("created") or 0.0
        if hasattr(mtime, "timestamp"):
            mtime = mtime.timestamp()
        tag = d.get("ETag") or d.get("etag") or d.get("md5Hash") or d.get("generation") or ""
        return ObjectInfo(rel, int(d.get("size") or 0), float(mtime), str(tag))

    def list(self, prefix: str) -> list[ObjectInfo]:
        full = f"{self._base}/{prefix.strip('/')}" if prefix.strip("/") else self._base
        try:
            found = self.fs.find(full, detail=True)
        except FileNotFoundError:
            found = {}
        except Exception as e:
            raise self._wrap(e, prefix, "listing") from e
        infos = [self._to_info(d) for d in found.values() if d.get("type", "file") == "file"]
        if self.protocol in ("s3", "s3a") and not self._bucket_seen:
            problem = None if infos else missing_bucket(self.fs, redact_url(self.url), self._base)
            if problem is not None:
                raise problem
            self._bucket_seen = True
        return sorted(infos, key=lambda o: o.path)

    def delete(self, path: str) -> None:
        full = self._full(path)
        try:
            self.fs.rm_file(full)
        except FileNotFoundError:  # gone already: what was asked
            return
        except Exception as e:
            raise self._wrap(e, path, "deleting") from e

    def download(self, path: str, dest: str, digest: Digest | None = None) -> int:
        full = self._full(path)
        try:
            if self.protocol in ("s3", "s3a"):
                # One streaming GET per object, hashed as written (storage/s3_get.py): shards
                # download in parallel, one request each (request costs stay predictable).
                return s3_download(self.fs, full, dest, digest)
            self.fs.get_file(full, dest)
        except Exception as e:
            raise self._wrap(e, path, "downloading") from e
        if digest is not None:
            with open(dest, "rb") as f:
                while chunk := f.read(4 * 2**20):
                    digest.update(chunk)
        return os.path.getsize(dest)

    def local_path(self, path: str) -> str | None:
        return None

