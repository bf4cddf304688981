"""Validation of every name that becomes part of a storage path."""

from __future__ import annotations

import re
from typing import TypeGuard

from dload_arrow.errors import ConfigError, InvalidNameError

__all__ = [
    "KEY_COLUMN",
    "check_digest",
    "is_digest",
    "check_name",
    "check_ref",
    "manifest_path",
    "not_portable",
    "parse_spec",
    "shard_path",
]

KEY_COLUMN = "__key__"
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")  # \Z: "$" lets a final "\n" in
_DIGEST = re.compile(r"\A[0-9a-f]{64}\Z")
_MAX = 128


def _too_long(value: object) -> str:
    """``" is N characters long"`` for a name refused only for its length, else ""."""
    if isinstance(value, str) and len(value) > _MAX and _NAME.match(value[:_MAX]):
        return f" ({len(value)} characters long: at most {_MAX})"
    return ""


# A local root writes each object as ``<name>.tmp-<uuid>`` first and its listings hide those:
# a name holding it would be stored but never listed.
_TEMP = ".tmp-"


def _reserved(value: object) -> str:
    """Why a name of the right alphabet is still refused ("" when it is not)."""
    if isinstance(value, str) and _TEMP in value and _NAME.match(value) and ".." not in value:
        return f" ('{_TEMP}' is reserved: a local root's temporary files carry it)"
    return ""


def check_name(name: str) -> str:
    """A dataset name: ASCII letters, digits, ``._-``, at most 128 characters, no ``..``
    and no ``.tmp-``."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name or _TEMP in name:
        at = (f" (NAME@VERSION is the CLI's form: in Python give the version apart, "
              f"repo.dataset({name.partition('@')[0]!r}, {name.partition('@')[2]!r}))"
              if isinstance(name, str) and "@" in name else "")
        raise InvalidNameError(
            f"dataset name {name!r} is not allowed{_too_long(name)}{_reserved(name)}: use "
            "ASCII letters, digits, '.', "
            "'_' and '-', starting with a letter or digit (no '/', no '..', at most 128 "
            "characters), e.g. "
            f"'imagenet-small'{at}"
        )
    return name


# Windows' device names, with or without an extension ("con.txt" too), and a final "." (which
# Windows drops: "a." and "a" are one file): a local root there cannot hold them as files.
_DEVICE = re.compile(r"\A(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?\Z", re.IGNORECASE)


def not_portable(name: str) -> str:
    """Why a valid dataset or tag name cannot be a file name on every system ("" when it
    can): refused when a dataset or tag is created, so that a root copied to Windows (or a
    local root there) holds every name it lists. Names stored before stay readable."""
    if _DEVICE.match(name):
        return f"{name.split('.')[0]!r} is a device name on Windows (no file can have it)"
    if name.endswith("."):
        return "Windows drops a final '.' from file names (it would be another name's file)"
    return ""


def check_ref(ref: str) -> str:
    """A ref or tag name: same alphabet as dataset names."""
    if not isinstance(ref, str) or not _NAME.match(ref) or ".." in ref or _TEMP in ref:
        raise InvalidNameError(
            f"ref/tag {ref!r} is not allowed{_too_long(ref)}{_reserved(ref)}: use ASCII "
            "letters, digits, '.', '_' and "
            "'-', starting with a letter or digit, at most 128 characters, e.g. 'v1'"
        )
    return ref


def is_digest(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a sha256 hex digest (64 chars 0-9a-f)."""
    return isinstance(value, str) and _DIGEST.match(value) is not None


def check_digest(digest: str, what: str = "digest") -> str:
    """A sha256 hex digest: exactly 64 lowercase hex characters."""
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise InvalidNameError(f"{what} {digest!r} is not a sha256 hex digest (64 chars 0-9a-f)")
    return digest


def shard_path(digest: str) -> str:
    """``shards/<aa>/<sha256>.parquet``."""
    check_digest(digest, "shard digest")
    return f"shards/{digest[:2]}/{digest}.parquet"


def manifest_path(name: str, version: str) -> str:
    """``datasets/<name>/manifests/<vid>.arrow``."""
    return f"datasets/{check_name(name)}/manifests/{check_digest(version, 'version id')}.arrow"


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``NAME[@VERSION]`` -> ``(name, version or None)``; ``NAME@`` (an unset variable after
    the ``@``) is refused, as an empty version is in Python, not read as the latest."""
    name, at, version = spec.partition("@")
    if at and not version.strip():
        raise ConfigError(f"version {version!r} after the @ of {spec!r} is empty (an unset "
                          f"variable?): write {name} for the latest, or {name}@VERSION")
    return name, (version or None)
