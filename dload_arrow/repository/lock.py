"""``dload.lock``: an experiment repo's pins from dataset names to version ids."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from dload_arrow.config import find_up
from dload_arrow.errors import ConfigError, InvalidNameError, NotFoundError
from dload_arrow.store.names import check_digest, check_name

__all__ = ["LOCK_FILE", "lock_path", "pinned_version", "read_lock", "write_lock"]

LOCK_FILE = "dload.lock"


def lock_path(create: bool = False) -> Path | None:
    """The nearest dload.lock up the tree; with ``create``, ./dload.lock when there is none."""
    found = find_up(LOCK_FILE)
    if found is None and create:
        return Path.cwd() / LOCK_FILE
    return found


def read_lock(path: Path | None = None) -> dict[str, str]:
    """Pins in the lock file (empty when there is none)."""
    path = path or lock_path()
    if path is None or not path.is_file():
        return {}
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}; fix it or run 'dload unpin'") from e
    pins = data.get("datasets", {})
    if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
        raise ConfigError(f"{path}: [datasets] must map names to version ids (strings); fix it "
                          "or delete the file")
    # Entries are checked where they are used (pinned_version), so one bad pin neither blocks
    # the other datasets nor the `dload unpin` that removes it.
    return dict(pins)


def pinned_version(name: str, path: Path | None = None) -> str | None:
    """The version id dload.lock pins ``name`` to, or None; a malformed pin is a ConfigError."""
    path = path or lock_path()
    vid = read_lock(path).get(check_name(name))
    if vid is None:
        return None
    try:
        return check_digest(vid, f"the version {name!r} is pinned to in {path}")
    except InvalidNameError as e:
        raise ConfigError(f"{e}; run `dload unpin {name}` (or `dload pin {name}` to pin "
                          "latest)") from e


def write_lock(pins: dict[str, str], path: Path) -> None:
    """Write pins sorted by name (atomically)."""
    lines = ["# dload.lock: dataset versions pinned by `dload pin`", "[datasets]"]
    lines += [f'"{n}" = "{v}"' for n, v in sorted(pins.items())]
    tmp = path.with_suffix(".lock.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def stale_pin(name: str, vid: str, error: NotFoundError) -> NotFoundError:
    """``error`` (no manifest for ``vid``) told as a pin to a version this root lacks, when
    ``name`` is pinned to ``vid`` by the lock file; else ``error`` itself."""
    path = lock_path()
    if path is None or read_lock(path).get(name) != vid:
        return error
    return NotFoundError(
        f"{name!r} is pinned to version {vid[:12]} by {path}, and this root has no such "
        f"version ({error}). Run `dload unpin {name}` to follow latest, ask for "
        f"{name}@latest, or open the root the pin was made in"
    )
