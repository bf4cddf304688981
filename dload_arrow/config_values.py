"""Normal forms and checks of setting values, each error naming where the value came from.

:mod:`dload_arrow.config` resolves which value wins; this module says what a value means:
a local path given as bytes or as a ``file://`` URL, a cache dir (local only), an S3
endpoint (an http(s) URL), a cache budget given as a number, and the working directory
that relative paths and the search for ``dload.toml`` start from; and that search itself
(:func:`find_up`, under ``DLOAD_CEILING_DIRECTORIES``), and the variables dload reads.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path
from typing import Any

from dload_arrow.errors import ConfigError

__all__ = ["KNOWN_ENV", "budget_text", "check_cache_dir", "check_endpoint", "config_file",
           "find_up", "fs_text", "key_hint", "local_form", "warn_unknown_env", "working_dir"]


def fs_text(value: Any) -> Any:
    """A path given as bytes (``os.fspath`` allows them) as text; anything else unchanged."""
    return os.fsdecode(value) if isinstance(value, bytes) else value


def local_form(value: Any) -> Any:
    """A ``file://`` URL as the local path it names; other values unchanged.

    ``file:///abs`` and ``file://localhost/abs`` (RFC 8089) are ``/abs``; ``file://rel`` is
    the relative path ``rel``, as the storage layer always read it.
    """
    if not isinstance(value, str) or value[:7].lower() != "file://":
        return value
    rest = value[7:]
    if rest.lower().startswith("localhost/"):
        rest = rest[len("localhost"):]
    return rest


def check_cache_dir(value: str, source: str) -> None:
    """The cache holds local copies: a URL there is refused (it would become a folder
    named ``s3:`` under the working directory)."""
    if "://" in value:
        raise ConfigError(
            f"cache_dir {value!r} (from {source}) is a URL; the cache is a local directory "
            "that holds copies of what the root stores: give a local folder, e.g. "
            "/scratch/dload-cache")


def check_endpoint(url: Any, source: str, used: bool = True) -> None:
    """An S3 endpoint must be an http(s) URL with a host, and hold no credentials (even one
    a local root leaves ``used=False``, unchecked otherwise); say which setting gave it."""
    from dload_arrow.storage.base import holds_credentials, redact_url

    text = str(url)
    parts = urllib.parse.urlsplit(text.strip())
    if used and (parts.scheme not in ("http", "https") or not parts.netloc or re.search(
            r"\s", parts.netloc) or text != text.strip()):
        hint = ("set R2_ACCOUNT_ID to your account id" if source == "env R2_ACCOUNT_ID"
                else "write it as https://host[:port] (http://127.0.0.1:9000 for a local "
                     "server)")
        raise ConfigError(f"endpoint_url {redact_url(text)!r} (from {source}) is not an "
                          f"http(s) URL with a host; {hint}")
    if holds_credentials(text):
        raise ConfigError(
            f"endpoint_url {redact_url(text)!r} (from {source}) holds credentials, which dload "
            "never reads from a URL (and a config file would keep in plain text); give them "
            "as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or a profile) and write the "
            "endpoint as http(s)://host[:port]")


# Every DLOAD_* variable dload reads; DLOAD_TEST_* are the test suite's own.
KNOWN_ENV = frozenset({
    "DLOAD_ROOT", "DLOAD_CACHE_DIR", "DLOAD_CACHE_BUDGET", "DLOAD_ENDPOINT_URL",
    "DLOAD_MEMORY_LIMIT", "DLOAD_CACHE_WAIT", "DLOAD_DIRECT_GET", "DLOAD_CEILING_DIRECTORIES",
    "DLOAD_LOCK",
    "DLOAD_CRASH_AT"})
_WARNED: set[str] = set()


def warn_unknown_env() -> None:
    """Warn (once a process) of a ``DLOAD_*`` variable dload does not read: a misspelt
    ``DLOAD_CACHEBUDGET`` would leave the setting at its default without a word."""
    import difflib
    import warnings

    from dload_arrow.errors import user_stacklevel

    for name in sorted(os.environ):
        if (name.startswith("DLOAD_") and name not in KNOWN_ENV and name not in _WARNED
                and not name.startswith("DLOAD_TEST_") and os.environ[name]):  # (empty: unset)
            _WARNED.add(name)
            shown = sorted(KNOWN_ENV - {"DLOAD_CRASH_AT"})  # (the test suite's, unlisted)
            close = difflib.get_close_matches(name, shown, n=1, cutoff=0.75)
            hint = f"did you mean {close[0]}? " if close else ""
            warnings.warn(f"the environment variable {name} is not one dload reads ({hint}"
                          f"known: {', '.join(shown)})", stacklevel=user_stacklevel())


def budget_text(value: Any, source: str) -> str:
    """A cache budget as the text the size parser reads: numbers (dload.toml allows them,
    ``Repository.open`` takes ints) as whole bytes, never in exponent form."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value).strip()
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"cache budget (from {source}) {value!r} is not a size; give bytes "
                          "or text such as '50GB', 'auto' or 'unlimited'")
    from dload_arrow.sizes import parse_size  # (its checks: a negative number)

    return str(parse_size(value, f"cache budget (from {source})"))


def config_file(path: Path) -> Path:
    """``path`` when it is a file; ConfigError naming what it is otherwise."""
    if path.is_file():
        return path
    what = ("a directory, not a file" if path.is_dir() else "a special file, not a file")
    if path.is_symlink():
        what = f"a link to {os.readlink(path)!r}, which " + (
            "is not a file" if os.path.exists(path) else "does not exist")
    raise ConfigError(f"{path} is {what}; fix it or delete it (dload reads no other "
                      f"{path.name} in its place)")


def key_hint(unknown: set[str], data: dict[str, Any]) -> str:
    """What an unknown key of a config file was likely meant to be: a table (``[dload]``)
    holding the settings, or a key spelt as the CLI flag (``cache-budget``)."""
    keys = ("root", "cache_dir", "cache_budget", "endpoint_url")
    for k in sorted(unknown):
        if isinstance(data[k], dict) and set(data[k]) & set(keys):
            return f" (settings go at the top of the file, not in a [{k}] table)"
        if k.replace("-", "_") in keys:
            return f" (did you mean {k.replace('-', '_')}?)"
    return ""


def find_up(filename: str, start: Path | None = None) -> Path | None:
    """The nearest ``filename`` in ``start`` (default: cwd) or one of its parents.

    The search does not climb into a directory listed in ``DLOAD_CEILING_DIRECTORIES``
    (``os.pathsep``-separated, like git's ``GIT_CEILING_DIRECTORIES``: the ceiling's own file
    is read only when the search starts there), so a stray ``dload.toml`` or ``dload.lock`` in
    ``/tmp`` or ``$HOME`` cannot leak into a project.

    A file in a ceiling the search stopped below is warned of once (earlier versions read it).

    Raises:
        ConfigError: ``filename`` is there but is no file (a directory, a dangling link):
            skipping it would use another root without a word.
    """
    here = (start or working_dir()).resolve()
    ceilings = {
        Path(c).resolve()
        for c in os.environ.get("DLOAD_CEILING_DIRECTORIES", "").split(os.pathsep)
        if c
    }
    for d in (here, *here.parents):
        if d in ceilings and d != here:
            _warn_above_ceiling(d / filename, d)
            break
        candidate = d / filename
        if os.path.lexists(candidate):
            return config_file(candidate)
        if d in ceilings:
            break
    return None


_SKIPPED: set[Path] = set()


def _warn_above_ceiling(path: Path, ceiling: Path) -> None:
    if os.path.lexists(path) and path not in _SKIPPED:
        import warnings

        from dload_arrow.errors import user_stacklevel

        _SKIPPED.add(path)
        warnings.warn(
            f"{path} is not read: {ceiling} is in DLOAD_CEILING_DIRECTORIES, and the search for "
            f"{path.name} stops below a ceiling (as git's does; dload read it before 5 Dec "
            f"2026); run from {ceiling}, or list its parent as the ceiling",
            stacklevel=user_stacklevel())


def working_dir() -> Path:
    """The working directory; a clear ConfigError when it was deleted under this process."""
    try:
        return Path.cwd()
    except FileNotFoundError as e:
        raise ConfigError(
            "the working directory no longer exists (deleted or replaced by another program "
            "while this shell stayed in it); cd to an existing directory and run again"
        ) from e
