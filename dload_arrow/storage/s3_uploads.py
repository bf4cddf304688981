"""Multipart uploads left open on an S3 root by a writer that was killed.

s3fs sends an object of 100 MiB or more (every full default shard) as a multipart upload. A
commit killed while one is in flight (the OOM killer, a preempted node) leaves it open: its
parts are stored, and billed, but no listing shows them and no object appears. gc lists the
open uploads under the root's ``shards/`` (``ListMultipartUploads``) and aborts those started
before its grace period, as it deletes a local root's temp files.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

__all__ = ["OpenUpload", "abort_upload", "open_uploads"]


@dataclass(frozen=True)
class OpenUpload:
    """One multipart upload in progress: its key (in the bucket), id, start and bytes."""

    key: str
    upload_id: str
    started: float
    bytes: int


def _client(storage: Any) -> tuple[Any, str, str] | None:
    """(s3fs filesystem, bucket, the root's key prefix) of an S3 root, else None."""
    if getattr(storage, "protocol", "") not in ("s3", "s3a"):
        return None
    bucket, _, root = str(storage._base).partition("/")
    return storage.fs, bucket, f"{root}/" if root else ""


def open_uploads(storage: Any, prefix: str, before: float) -> list[OpenUpload]:
    """The multipart uploads under ``prefix`` of an S3 root started before ``before`` (a
    time.time()); none for other roots."""
    found = _client(storage)
    if found is None:
        return []
    fs, bucket, root = found
    args: dict[str, Any] = {"Bucket": bucket, "Prefix": root + prefix}
    out = []
    while True:
        page = fs.call_s3("list_multipart_uploads", **args)
        for up in page.get("Uploads", []):
            started = up["Initiated"].timestamp()
            if started < before:
                parts = fs.call_s3("list_parts", Bucket=bucket, Key=up["Key"],
                                   UploadId=up["UploadId"]).get("Parts", [])
                out.append(OpenUpload(up["Key"], up["UploadId"], started,
                                      sum(int(p.get("Size", 0)) for p in parts)))
        if not page.get("IsTruncated"):
            return out
        args["KeyMarker"] = page.get("NextKeyMarker", "")
        args["UploadIdMarker"] = page.get("NextUploadIdMarker", "")


def abort_upload(storage: Any, upload: OpenUpload) -> None:
    """Abort ``upload``: its parts are deleted (an upload finished meanwhile is left alone:
    the store answers NoSuchUpload)."""
    found = _client(storage)
    if found is None:
        return
    fs, bucket, _ = found
    with contextlib.suppress(FileNotFoundError):  # (NoSuchUpload): completed or aborted since
        fs.call_s3("abort_multipart_upload", Bucket=bucket, Key=upload.key,
                   UploadId=upload.upload_id)
