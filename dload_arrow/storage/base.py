"""The storage contract: the handful of primitives every backend provides.

Paths are relative to the root, use ``/`` and never start with ``/`` or contain ``..``;
:func:`check_relpath` enforces that at the boundary so a hostile manifest cannot steer a
read or a write outside the root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dload_arrow.errors import InvalidNameError

__all__ = ["Digest", "ObjectInfo", "Storage", "check_relpath", "redact_url"]

_SEGMENT = re.compile(r"^[A-Za-z0-9._@=+,-]+$")


class Digest(Protocol):
    """What a download feeds its bytes to (``hashlib.sha256()``)."""

    def update(self, data: bytes | memoryview, /) -> None: ...


@dataclass(frozen=True)
class ObjectInfo:
    """Size and modification time (seconds since the epoch, 0.0 when unknown) of an object,
    and what else tells this object from another written at the same path (an S3 ETag, a
    local file's inode and nanosecond time; '' when the store gives nothing)."""

    path: str
    size: int
    mtime: float
    tag: str = ""


def check_relpath(path: str) -> str:
    """Return ``path`` if it is a safe relative object path, else raise InvalidNameError."""
    if not path or path.startswith("/") or "\\" in path:
        raise InvalidNameError(f"object path {path!r} must be relative and use '/' separators")
    for seg in path.split("/"):
        if seg in ("", ".", "..") or not _SEGMENT.match(seg):
            raise InvalidNameError(
                f"object path {path!r} has an unsafe segment {seg!r}; "
                "segments may use letters, digits and ._@=+,-"
            )
    return path


def redact_url(url: str) -> str:
    """Remove any ``user:secret@`` part from a URL so it can be printed."""
    return re.sub(r"(?<=://)[^/@]*@", "***@", url)


def holds_credentials(url: str) -> bool:
    """Whether ``url`` holds a ``user:secret@`` part (the part :func:`redact_url` hides)."""
    return re.search(r"://[^/@]*@", url) is not None


def redact_text(text: str, url: str) -> str:
    """``text`` (an error message) without the ``user:secret@`` part of ``url``, wherever it
    appears: fsspec repeats the path it was given, without its scheme."""
    m = re.search(r"://([^/@]*)@", url)
    text = redact_url(text)
    return text.replace(m.group(1) + "@", "***@") if m and m.group(1) else text


@runtime_checkable
class Storage(Protocol):
    """What the store needs from a root. Implementations: local, fsspec (s3, memory, ...)."""

    url: str
    is_local: bool
    conditional_writes: bool

    def read(self, path: str) -> bytes:
        """Whole object; NotFoundError if absent."""
        ...

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of an object, one ranged request."""
        ...

    def write(self, path: str, data: bytes) -> None:
        """Atomically replace the object: readers see the old or the new bytes, never a mix."""
        ...

    def put_if_absent(self, path: str, data: bytes | memoryview) -> bool:
        """Create the object only if it does not exist; return False (writing nothing) if it did.

        ``data`` may be a memoryview (a shard's encoded buffer): a local root writes it without
        copying it into ``bytes`` first."""
        ...

    def read_with_token(self, path: str) -> tuple[bytes, str] | None:
        """The object and an opaque token for :meth:`compare_and_swap`, or None if absent."""
        ...

    def compare_and_swap(self, path: str, data: bytes, token: str | None) -> bool:
        """Write only if the object still matches ``token`` (None: still absent). False if not."""
        ...

    def exists(self, path: str) -> bool: ...

    def touch(self, path: str) -> bool:
        """Set the object's modification time to now, bytes unchanged; False when it is absent.

        A commit that reuses a stored shard touches it, so gc's grace period protects it.
        """
        ...

    def info(self, path: str) -> ObjectInfo: ...

    def list(self, prefix: str) -> list[ObjectInfo]:
        """Every object under ``prefix`` (recursive), paths relative to the root, sorted."""
        ...

    def delete(self, path: str) -> None:
        """Remove the object; absent objects are not an error."""
        ...

    def download(self, path: str, dest: str, digest: Digest | None = None) -> int:
        """Stream the object into the local file ``dest``; return the byte count.

        ``digest`` (a :mod:`hashlib` object) is fed every byte written, in order, as it is
        written: the caller verifies a shard without reading the file a second time.
        """
        ...

    def local_path(self, path: str) -> str | None:
        """A filesystem path to read the object in place, when the root is a local directory."""
        ...
