"""``dload.lock``: an experiment repo's pins from dataset names to version ids."""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import functools
import os
import re
import shlex
import stat
import sys
import tomllib
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

from dload_arrow.config import find_up
from dload_arrow.config_values import working_dir
from dload_arrow.errors import ConfigError, InvalidNameError, NotFoundError, user_stacklevel
from dload_arrow.store.names import check_digest, check_name

__all__ = ["LOCK_FILE", "editing", "is_pinned", "listed_pins", "lock_path", "pinned_version",
           "read_lock",
           "stale_pin", "unused_script_lock", "write_lock"]

LOCK_FILE = "dload.lock"


def lock_path(create: bool = False) -> Path | None:
    """The lock file: ``DLOAD_LOCK`` if set, else the nearest dload.lock up the tree from the
    working directory; with ``create``, ./dload.lock when there is none."""
    given = os.environ.get("DLOAD_LOCK")
    if given:
        return _given(given, create)
    found = find_up(LOCK_FILE)
    if found is None and create:
        return working_dir() / LOCK_FILE
    # A symlinked lock file (one shared by several checkouts) is edited, and locked, where
    # it lives: replacing the link with a file would leave the shared pins behind.
    return None if found is None else Path(found).resolve()


def _given(given: str, create: bool) -> Path:
    """The lock file ``DLOAD_LOCK`` names (a job started outside the project: QA user58)."""
    path = Path(os.path.expanduser(given))
    path = path if path.is_absolute() else working_dir() / path
    if path.is_dir():
        raise ConfigError(f"DLOAD_LOCK={given!r} is a directory: set it to the lock file "
                          f"({path / LOCK_FILE}), or unset it")
    if create and not path.parent.is_dir():  # (QA errors61: a bare "[Errno 2]")
        raise ConfigError(f"DLOAD_LOCK={given!r}: its folder {path.parent} does not exist; "
                          "create it, or unset DLOAD_LOCK")
    if not path.exists() and not create:
        raise ConfigError(f"DLOAD_LOCK={given!r}: no such file (the pins would be ignored); "
                          "set it to the project's dload.lock, or unset it (`dload pin NAME` "
                          "writes the file it names)")
    return path.resolve()


def unused_script_lock(name: str) -> str | None:
    """A warning when no lock file is in use but one up from the running script's folder
    pins ``name``: ``python proj/train.py`` started outside ``proj`` reads latest, not the
    pin (the lock is looked up from the working directory, as git does)."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if not isinstance(script, str) or not script.endswith(".py"):
        return None
    found = _script_lock(script)
    try:
        vid = None if found is None else read_lock(found).get(name)
    except (ConfigError, OSError):
        return None
    if vid is None:
        return None
    return (f"{found} beside the running script pins {name!r} to {str(vid)[:12]}, but the "
            f"working directory {working_dir()} has no dload.lock, so {name!r} is read at "
            f"latest: run from the project folder, or set DLOAD_LOCK={found}")


@functools.lru_cache(maxsize=4)
def _script_lock(script: str) -> Path | None:
    """The nearest dload.lock up from ``script``'s folder (looked up once a process: every
    ``dataset()`` call asks; QA review58b)."""
    folder = Path(script).resolve().parent
    if {"site-packages", "dist-packages"} & set(folder.parts):
        return None
    try:
        return find_up(LOCK_FILE, folder)
    except (ConfigError, OSError):
        return None


def read_lock(path: Path | None = None) -> dict[str, str]:
    """Pins in the lock file (empty when there is none)."""
    path = path or lock_path()
    if path is None or not path.is_file():
        return {}
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}; fix the file (TOML: [datasets] name = "
                          "\"<version id>\") or delete it") from e
    pins = data.get("datasets", {})
    stray = [k for k, v in data.items() if k != "datasets" and isinstance(v, str)]
    if stray:  # (QA errors61: such pins were ignored, and latest read instead)
        raise ConfigError(f"{path}: {stray[0]!r} is outside the [datasets] table, so it pins "
                          "nothing; pins go below a [datasets] line (name = \"<version id>\"): "
                          "move it there, or delete it")
    tables = [k for k, v in data.items() if k != "datasets" and isinstance(v, dict)]
    near = [k for k in tables if k.lower().rstrip("s") == "dataset"] or (
        [] if "datasets" in data else difflib.get_close_matches("datasets", tables, 1, 0.85))
    if near:  # [dataset], [Datasets]: a table of pins no read would see
        raise ConfigError(f"{path}: a table [{near[0]}] (pins go in [datasets]): rename it "
                          "[datasets], or delete it")
    if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
        raise ConfigError(f"{path}: [datasets] must map names to version ids (strings); fix it "
                          "or delete the file")
    # Entries are checked where they are used (pinned_version), so one bad pin neither blocks
    # the other datasets nor the `dload unpin` that removes it.
    return dict(pins)


def listed_pins(path: Path | None) -> dict[str, str]:
    """The pins a listing shows: those of valid dataset names (another one is warned of, with
    the ``dload unpin`` that removes it, instead of failing the whole listing)."""
    pins = read_lock(path)
    for name in list(pins):
        try:
            check_name(name)
        except InvalidNameError:
            warnings.warn(f"{path} pins {name!r}, which is no dataset name: remove it "
                          f"(`dload unpin {shlex.quote(name)}`)", stacklevel=user_stacklevel())
            del pins[name]
    return pins


def pinned_version(name: str, path: Path | None = None) -> str | None:
    """The version id dload.lock pins ``name`` to, or None; a malformed pin is a ConfigError."""
    path = path or lock_path()
    vid = read_lock(path).get(check_name(name))
    if vid is None:
        return None
    try:
        return check_digest(vid, f"the pin of {name!r} in {path},")
    except InvalidNameError as e:
        short = (f" (a short id? pin the whole one: `dload pin {name}@{vid}`)"
                 if re.fullmatch(r"[0-9a-f]{1,63}", vid) else "")
        raise ConfigError(f"{e}{short}; or run `dload unpin {name}` (or `dload pin {name}` "
                          "to pin latest)") from e


def write_lock(pins: dict[str, str], path: Path) -> None:
    """Write ``pins`` as the lock file's ``[datasets]`` table (atomically).

    The rest of an existing file stays as the user wrote it: comments, other tables, line
    ends, and the order and comments of the pins that remain. Only changed pins are
    rewritten; new ones go at the end of the table. Pins written in another shape (an inline
    table, dotted keys, a quoted header) cannot be edited in place: a file holding only such
    pins is written anew, one holding anything else (comments, other tables) is refused with
    ConfigError and left as it was.
    """
    with open(path, newline="") if path.is_file() else contextlib.nullcontext() as f:
        old = "" if f is None else f.read()
    eol = "\r\n" if "\r\n" in old and old.count("\r\n") == old.count("\n") else "\n"
    text = _edited(old, pins) if old.strip() else None
    if text is None or not _same_but_pins(old, text, pins):
        if set(_parsed(old)) - {"datasets"} or "#" in old:
            raise ConfigError(
                f"cannot edit the pins in {path} in place (they are not written as a plain "
                "[datasets] table: an inline table, dotted keys or a quoted header; or a "
                "[datasets] line sits inside a multi-line string), and rewriting the file "
                "would lose its comments or other tables. Write them as a "
                '[datasets] table (a line [datasets], then name = "<version id>" lines) and '
                "run the command again; the file is unchanged")
        text = _fresh(pins)
    mode = path.stat().st_mode if path.is_file() else None
    if mode is not None and not mode & 0o222:  # pins frozen on purpose (CI)
        raise ConfigError(f"{path} is read-only (mode {stat.filemode(mode)}): its pins are "
                          "frozen; make it writable (chmod u+w) to change them")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "w", newline="") as out:
            out.write(text.replace("\n", eol))
        os.replace(tmp, path)
    except OSError as e:  # a project folder this user cannot write (QA readonly55)
        raise ConfigError(f"cannot write {path}: {e.strerror}; pin from a project folder you "
                          "can write (pins go to the nearest dload.lock up the tree, else "
                          "./dload.lock)") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def editing(path: Path) -> Iterator[None]:
    """Hold the lock file's directory locked (``flock``) for a read-modify-write of it, so
    that processes pinning at once (a sweep's jobs) lose none of each other's pins."""
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _fresh(pins: dict[str, str]) -> str:
    lines = ["# dload.lock: dataset versions pinned by `dload pin`", "[datasets]"]
    lines += [_pin_line(n, v) for n, v in sorted(pins.items())]
    return "\n".join(lines) + "\n"


def _pin_line(name: str, vid: str) -> str:
    return f'"{name}" = "{vid}"'


_HEADER = re.compile(r"^\s*\[\s*datasets\s*\]\s*(#.*)?$")
_TABLE = re.compile(r"^\s*\[")


def _edited(old: str, pins: dict[str, str]) -> str | None:
    """``old`` with its ``[datasets]`` table set to ``pins``; None if it has no such table."""
    lines = old.replace("\r\n", "\n").split("\n")  # (not splitlines: U+2028 is no line end)
    if lines and not lines[-1]:
        lines.pop()
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        if "datasets" in _parsed(old):  # pins in another shape (an inline table)
            return None
        body = ([""] if lines and lines[-1].strip() else []) + ["[datasets]"]
        body += [_pin_line(n, v) for n, v in sorted(pins.items())]
        return "\n".join(lines + body) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
    kept: list[str] = []
    seen: set[str] = set()
    for line in lines[start + 1:end]:
        entry = _parsed(line) if line.strip() and not line.lstrip().startswith("#") else {}
        if len(entry) != 1:
            kept.append(line)  # blank lines and comments stay
            continue
        name = next(iter(entry))
        if name in pins and name not in seen:
            seen.add(name)
            kept.append(line if entry[name] == pins[name] else _pin_line(name, pins[name]))
    last = len(kept)
    while last and not kept[last - 1].strip():  # new pins go before the table's blank tail
        last -= 1
    added = [_pin_line(n, v) for n, v in sorted(pins.items()) if n not in seen]
    kept[last:last] = added
    return "\n".join(lines[:start + 1] + kept + lines[end:]) + "\n"


def _parsed(text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _same_but_pins(old: str, new: str, pins: dict[str, str]) -> bool:
    """True when ``new`` parses to ``old``'s content with ``pins`` as its [datasets]."""
    try:
        before, after = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return False
    before["datasets"] = dict(pins)
    return after == before


def is_pinned(name: str, vid: str) -> bool:
    """True when the lock file pins ``name`` to ``vid`` (a local read, no request)."""
    path = lock_path()
    return path is not None and read_lock(path).get(name) == vid


def stale_pin(name: str, vid: str, error: NotFoundError, removed: bool = False
              ) -> NotFoundError:
    """``error`` (no manifest for ``vid``) told as a pin to a version this root lacks, when
    ``name`` is pinned to ``vid`` by the lock file; else ``error`` itself. ``removed``: the
    root holds a removal record of ``vid`` (``dload rm --version`` took it)."""
    path = lock_path()
    if path is None or read_lock(path).get(name) != vid:
        return error
    if removed:
        return NotFoundError(
            f"{name!r} is pinned to version {vid[:12]} by {path}, and that version was removed "
            f"from the root (`dload rm {name} --version`). Re-lock: run `dload pin {name}` to "
            f"pin latest (or `dload pin {name}@VERSION`; `dload versions {name}` lists them), "
            f"`dload unpin {name}` to follow latest, or ask for a version explicitly"
        )
    return NotFoundError(
        f"{name!r} is pinned to version {vid[:12]} by {path}, and this root has no such "
        f"version ({error}). Run `dload unpin {name}` to follow latest, ask for "
        f"{name}@latest, or open the root the pin was made in"
    )
