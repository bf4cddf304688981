"""Storage roots: the only layer that knows URLs, endpoints and credentials."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from dload_arrow.args import kind
from dload_arrow.errors import ConfigError
from dload_arrow.storage.base import (
    ObjectInfo,
    Storage,
    check_relpath,
    holds_credentials,
    redact_url,
)
from dload_arrow.storage.local import LocalStorage
from dload_arrow.storage.remote import FsspecStorage

__all__ = [
    "FsspecStorage",
    "LocalStorage",
    "ObjectInfo",
    "Storage",
    "check_relpath",
    "open_storage",
    "redact_url",
    "warn_unused_endpoint",
]


def open_storage(
    url: str,
    *,
    endpoint_url: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> Storage:
    """Open a root from a local path or a URL (``file://``, ``s3://``, ``memory://``, ...).

    ``endpoint_url`` points S3 at R2, MinIO, SeaweedFS or a test server. Credentials are never
    passed here: s3fs takes them from the standard AWS chain (env, profile, instance role).
    """
    # Checked for a local root too, where both are unused: a wrong type is a caller's bug.
    # Only the type is named: the values may hold credentials.
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise TypeError(f"storage_options must be a dict of fsspec options (e.g. "
                        f"{{'anon': True}}), got {kind(storage_options)}")
    if endpoint_url is not None and not isinstance(endpoint_url, str):
        raise TypeError(f"endpoint_url must be a URL as a str (e.g. 'http://127.0.0.1:9000'), "
                        f"got {kind(endpoint_url)}")
    retries = (storage_options or {}).get("retries")  # s3fs's own retries, set on its client
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int)
                                or retries < 1):  # s3fs fails every request with 0 attempts
        raise ConfigError(f"storage_options retries must be a whole number of attempts >= 1 "
                          f"(e.g. 5), got {retries!r}")
    if "://" not in url:
        return LocalStorage(url)
    if url.startswith("file://"):
        return LocalStorage(url[len("file://") :])
    protocol, _, rest = url.partition("://")
    if protocol in ("http", "https"):
        raise ConfigError(f"root {redact_url(url)!r}: an http(s) URL is read-only, and a root is "
                          "written to; use a local path or s3://bucket/prefix (an S3-compatible "
                          "server's address goes in endpoint_url)")
    if not rest.strip("/"):
        raise ConfigError(f"root {redact_url(url)!r} names no bucket or path: write it as "
                          f"{protocol}://bucket/prefix")
    try:
        import fsspec

        fsspec.get_filesystem_class(protocol)
    except (ValueError, ImportError) as e:
        if protocol in ("s3", "s3a"):
            raise ConfigError(f"root {redact_url(url)!r}: S3 roots need s3fs, which is not "
                              "installed here: pip install 'dload-arrow[s3]'") from e
        raise ConfigError(f"root {redact_url(url)!r}: {protocol}:// is not a storage this "
                          f"machine can open ({e}); use a local path or s3://bucket/prefix") from e
    opts = dict(storage_options or {})
    if url.startswith(("s3://", "s3a://")):
        endpoint = endpoint_url or os.environ.get("DLOAD_ENDPOINT_URL")
        ck = (opts.get("client_kwargs") or {}).get("endpoint_url")
        given = [(v, w) for v, w in ((opts.get("endpoint_url"), "storage_options"), (ck, "its "
                 "client_kwargs")) if v]
        ends = [(endpoint, "endpoint_url: the argument, DLOAD_ENDPOINT_URL or dload.toml")
                ] * bool(endpoint) + given
        for v, w in ends:
            if holds_credentials(str(v)):
                raise ConfigError(  # never quoted: the part before '@' is a secret
                    f"the endpoint URL {redact_url(str(v))!r} ({w}) holds credentials, which "
                    "are not read from it; give them as AWS_ACCESS_KEY_ID / "
                    "AWS_SECRET_ACCESS_KEY (or a profile) and write the endpoint as "
                    "http(s)://host[:port]")
        if len({str(v).rstrip("/") for v, _ in ends}) > 1:
            raise ConfigError(
                f"two S3 endpoints for {redact_url(url)!r}: " + " and ".join(
                    f"{redact_url(str(v))!r} ({w})" for v, w in ends) + "; give one, as "
                "endpoint_url")
        if endpoint and not given:
            opts["endpoint_url"] = endpoint
    return FsspecStorage(url, opts)


def warn_unused_endpoint(storage: Storage, endpoint_url: str | None) -> None:
    """Warn when an ``endpoint_url`` passed for a root goes unused: the root is a local
    directory (a bucket written without ``s3://`` reads as a folder of that name)."""
    if endpoint_url is not None and isinstance(storage, LocalStorage):
        warnings.warn(
            f"endpoint_url {redact_url(endpoint_url)!r} is ignored: the root {storage.url!r} "
            "is a local directory; to use the S3 server write the root as "
            "s3://bucket/prefix", UserWarning, stacklevel=3)
