"""Checks of an S3 root that turn "looks empty" into "is not there".

Listing a bucket that does not exist, or a prefix at an endpoint that answers 404 to
everything, gives no objects, so a mistyped bucket looked like an empty root (``dload ls``:
"(none)", exit 0) and a commit there failed on "no object shards/...". A root URL is checked
when opened (bucket name rules, no empty or ``..`` segments), and an empty listing checks once
that the bucket exists.
"""

from __future__ import annotations

import re
from typing import Any

from dload_arrow.errors import ConfigError, StorageError

__all__ = ["REFUSED_CREDENTIALS", "check_s3_url", "failure_hint", "missing_bucket"]

REFUSED_CREDENTIALS = ("the storage refused these credentials: check them (AWS_ACCESS_KEY_ID / "
                       "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws) and their permission on the "
                       "bucket")

NO_CREDENTIALS = ("no credentials were found: set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, "
                  "AWS_PROFILE or ~/.aws/credentials (`dload status` shows what is found)")
NO_ENDPOINT = ("no endpoint_url is set, so AWS S3 itself was asked: for R2, MinIO, SeaweedFS "
               "or another S3-compatible server set DLOAD_ENDPOINT_URL or endpoint_url")


def failure_hint(error: BaseException, endpoint_set: bool) -> str:
    """How to fix a failed request to an S3 root, when its error says: credentials refused,
    none found, or AWS unreachable where no endpoint was set (an offline node); else ""."""
    from dload_arrow.storage.s3_conditional import refused_credentials

    if refused_credentials(error):
        return REFUSED_CREDENTIALS
    chain: list[str] = []
    e: BaseException | None = error  # s3fs and aiobotocore wrap botocore's errors
    while e is not None and len(chain) < 8:
        chain.append(type(e).__name__)
        e = e.__cause__ or e.__context__
    if "NoCredentialsError" in chain or "Unable to locate credentials" in str(error):
        return NO_CREDENTIALS
    unreachable = "EndpointConnectionError" in chain or "Could not connect" in str(error)
    if not endpoint_set and "amazonaws.com" in str(error) and unreachable:
        return NO_ENDPOINT
    if endpoint_set and unreachable:  # (QA errors61: named no setting)
        return ("is the server up at that address? It comes from DLOAD_ENDPOINT_URL, "
                "endpoint_url in dload.toml or Repository.open(endpoint_url=...) (`dload status` "
                "shows which)")
    return ""


# S3's rules for bucket names (the strict ones that AWS, R2, MinIO and SeaweedFS share).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def check_s3_url(url: str, base: str) -> None:
    """Raise ConfigError when ``base`` (``bucket/prefix`` of ``url``) is not a usable root."""
    bucket, _, prefix = base.partition("/")
    if "@" in bucket:  # never quote it: the part before '@' is a secret
        raise ConfigError(
            f"root {url!r}: credentials in the URL are not read; give them as "
            "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) and write the root as "
            "s3://bucket/prefix"
        )
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise ConfigError(
            f"root {url!r}: {bucket!r} is not a valid bucket name (3-63 lowercase letters, "
            "digits, dots and hyphens, starting and ending with a letter or digit)"
        )
    segments = prefix.split("/") if prefix else []
    if any(s in ("", ".", "..") for s in segments):
        raise ConfigError(
            f"root {url!r}: the prefix {prefix!r} has an empty, '.' or '..' segment; write it "
            "as s3://bucket/a/b"
        )


def missing_bucket(fs: Any, url: str, base: str) -> StorageError | None:
    """The error for a bucket that does not exist at the endpoint, else None.

    The probe lists at most one key under the root's own prefix, which credentials scoped to
    that prefix may do (``HeadBucket`` may be refused to them); only S3's "no such bucket"
    (s3fs: FileNotFoundError) counts as missing, any other failure as "cannot tell".
    """
    from fsspec.asyn import sync

    bucket, _, prefix = base.partition("/")

    async def probe() -> None:
        await fs._call_s3("list_objects_v2", Bucket=bucket, MaxKeys=1,
                          Prefix=f"{prefix}/" if prefix else "")

    try:
        sync(fs.loop, probe)
        return None
    except FileNotFoundError:
        pass
    except Exception:
        return None
    endpoint = getattr(fs, "client_kwargs", {}).get("endpoint_url") or getattr(
        fs, "endpoint_url", None)
    where = f" at {endpoint}" if endpoint else ""
    return StorageError(
        f"root {url}: bucket {bucket!r} does not exist{where} (or these credentials cannot "
        "see it); check the root URL and DLOAD_ENDPOINT_URL / endpoint_url, or create the "
        "bucket"
    )
