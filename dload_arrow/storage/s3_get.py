"""One streaming GET of an S3 object into a local file, hashed as it is written.

s3fs's ``get_file`` reads the response 64 KiB at a time, and the caller then had to read the
file back to hash it: on a cold epoch that re-read and the small reads were a quarter of the
client's CPU (bench/notes/speed-work.md, "Tenth session"). Here each read takes whatever the
connection has buffered (up to :data:`READ_SIZE`), writes it to the file and hands the same
bytes object to a hashing thread (no copy, no re-read; ``hashlib`` releases the GIL). Hashing
on the event-loop thread itself saved as much CPU but chained download and hash in one thread:
cold per-sample epochs were no faster.

A transfer torn mid-way resumes with a ranged GET from the first missing byte, as s3fs does,
up to the filesystem's ``retries``; the digest has seen every byte once, in order.

A download that is hashed (a shard) goes straight over ``http.client`` where it can
(http_get.py): off the event loop, into reused buffers. This module's GET is then what it
falls back to, or what resumes it.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from dload_arrow.storage.base import Digest
from dload_arrow.storage.http_get import (
    direct_get,
    exiting,
    presigned_url,
    refused,
    write_all,
)

__all__ = ["READ_SIZE", "s3_download", "s3_get_object"]

_BODY_RETRIES = 5  # reads of a body that break off, each resumed from its last byte

READ_SIZE = 8 * 2**20


def _retryable() -> tuple[type[BaseException], ...]:
    from botocore.exceptions import IncompleteReadError, ResponseStreamingError
    from s3fs.core import S3_RETRYABLE_ERRORS

    # A body that ends short raises IncompleteReadError (aiobotocore checks the length).
    return (*S3_RETRYABLE_ERRORS, IncompleteReadError, ResponseStreamingError)


class _Feeder:
    """Feeds chunks to ``digest`` on a thread of its own; the downloading thread only enqueues.

    A chunk put with a ``back`` queue is a view of a reused buffer: the buffer goes back there
    once hashed."""

    def __init__(self, digest: Digest) -> None:
        self.digest = digest
        # Bounded: a hash slower than the network waits for, rather than buffers, a shard.
        self._queue: queue.Queue[tuple[Any, Any] | None] = queue.Queue(maxsize=16)
        self._thread = threading.Thread(target=self._run, name="dload-hash", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            chunk, back = item
            self.digest.update(chunk)
            if back is not None:
                back.put(chunk.obj)

    def put(self, chunk: bytes | memoryview, back: queue.Queue[bytearray] | None = None) -> None:
        self._queue.put((chunk, back))

    def close(self) -> None:
        """Wait until every chunk put so far is hashed."""
        self._queue.put(None)
        self._thread.join()


def s3_download(fs: Any, full: str, dest: str, digest: Digest | None) -> int:
    """Write object ``full`` (``bucket/key``) of s3fs filesystem ``fs`` to ``dest``; its size.

    Raises what s3fs raises (``FileNotFoundError`` for a missing object).
    """
    import asyncio

    from fsspec.asyn import sync

    bucket, key, version = fs.split_path(full)
    retryable = _retryable()
    retries = _BODY_RETRIES  # not the client's: a download resumes where its body broke off

    async def get(start: int) -> Any:
        kw: dict[str, Any] = dict(getattr(fs, "req_kw", {}))
        if version:
            kw["VersionId"] = version
        if start:
            kw["Range"] = f"bytes={start}-"
        resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, **kw)
        return resp["Body"]

    async def run(f: Any, written: int, failures: int) -> int:
        body = await get(written)
        try:
            while True:
                try:
                    chunk = await body.read(READ_SIZE)
                except retryable:
                    failures += 1
                    if failures >= retries:
                        raise
                    body.close()
                    await asyncio.sleep(min(1.7**failures * 0.1, 15))
                    body = await get(written)
                    continue
                if not chunk:
                    return written
                write_all(f.fileno(), chunk)
                if feeder is not None:
                    feeder.put(chunk)
                written += len(chunk)
        finally:
            body.close()

    feeder = None if digest is None else _Feeder(digest)
    try:
        with open(dest, "wb", buffering=0) as f:
            written, failures = 0, 0
            url = None if feeder is None else presigned_url(fs, bucket, key, version)
            if url is not None:
                got = direct_get(fs, url, f.fileno(), feeder.put if feeder else None)
                if got.done:
                    return got.written
                if exiting():  # cut at exit: nobody will read it
                    raise RuntimeError(f"the download of {full} was stopped: Python is exiting")
                refused(fs, got)
                written = got.written
                failures = 1 if written else 0  # torn: s3fs resumes; refused: s3fs from 0
            result: int = sync(fs.loop, run, f, written, failures)
    finally:
        if feeder is not None:
            feeder.close()
    return result


def s3_get_object(fs: Any, full: str) -> tuple[bytes, str]:
    """The bytes of object ``full`` and the ETag of the one GET that returned them.

    The ETag names exactly the bytes read (it is not always their MD5: SSE-KMS and SSE-C
    buckets use other ETags). One request: s3fs's ``cat_file`` asks for the size first.
    """
    from fsspec.asyn import sync

    bucket, key, _ = fs.split_path(full)

    async def get() -> tuple[bytes, str]:
        resp = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        try:
            return bytes(await resp["Body"].read()), str(resp["ETag"])
        finally:
            resp["Body"].close()

    result: tuple[bytes, str] = sync(fs.loop, get)
    return result
