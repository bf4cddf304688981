"""The log of ref moves (``datasets/<name>/log/<ref>/<seq>.json``, one object a move, never
rewritten): writing an entry, finding the last number, reading them all."""

from __future__ import annotations

import getpass
import json
import re
import socket
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dload_arrow.errors import IntegrityError, NotAFileError, NotFoundError, user_stacklevel
from dload_arrow.storage import Storage
from dload_arrow.store.names import check_name

if TYPE_CHECKING:
    from dload_arrow.store.refs import RefValue

__all__ = ["EPOCHS", "LogEntry", "append_log", "is_log_entry", "last_seq", "log_entry", "read_log"]

_ENTRY = re.compile(r"\d+\.json")


@dataclass(frozen=True)
class LogEntry:
    """One ref move."""

    ref: str
    seq: int
    version: str | None
    previous: str | None
    user: str
    host: str
    time: float
    action: str


def is_log_entry(path: str) -> bool:
    """Whether ``path`` names a log entry (``<seq>.json``); other files in a log folder (a
    ``.DS_Store``, someone's notes) are not dload's and are passed over."""
    return _ENTRY.fullmatch(path.rsplit("/", 1)[-1]) is not None


def last_seq(storage: Storage, name: str, ref: str) -> int:
    entries = storage.list(f"datasets/{name}/log/{ref}/")
    return max((int(o.path.rsplit("/", 1)[-1].split(".")[0]) for o in entries
                if is_log_entry(o.path)), default=0)


def append_log(
    storage: Storage,
    name: str,
    ref: str,
    new: RefValue,
    previous: str | None,
    action: str,
    deleted: bool = False,
) -> bool:
    """Write the entry of ``new.seq``; False when one is there already (a clash)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    entry: dict[str, Any] = {
        "ref": ref,
        "seq": new.seq,
        "version": None if deleted else new.version,
        "previous": previous,
        "user": user,
        "host": socket.gethostname(),
        "time": time.time(),
        "action": action,
    }
    path = f"datasets/{name}/log/{ref}/{new.seq:012d}.json"
    data = json.dumps(entry, sort_keys=True).encode()
    if storage.put_if_absent(path, data):
        return True
    try:  # a retried request that found its own write (the store applied it, then failed)
        return storage.read(path) == data
    except NotFoundError:
        return False


_LOG_READERS = 16


def read_log(storage: Storage, name: str) -> list[LogEntry]:
    """Every recorded ref move of a dataset, oldest first.

    An entry is never rewritten, so one this process read before (the same path, size, time
    and store tag in the listing) is not read again: an ``rm`` read the whole log twice, and a
    retention job's rm after rm read it again each time (QA replay64: 1 s an rm after 150
    appends on S3). One listing a call still finds the new ones."""
    prefix = f"datasets/{check_name(name)}/log/"
    seen: dict[tuple[str, int, float, str], LogEntry] = storage.__dict__.setdefault(
        "_log_seen", {})  # (the tag: an S3 ETag; LastModified is whole seconds, QA review64f)
    listed = [(o.path, o.size, o.mtime, o.tag) for o in storage.list(prefix)
              if is_log_entry(o.path)]
    new = [k for k in listed if k not in seen]
    # an object a move: read side by side (one after another, 10,000 versions on S3 were
    # minutes a `dload versions`: QA cliffs56)
    with ThreadPoolExecutor(min(_LOG_READERS, max(1, len(new)))) as pool:
        texts = list(pool.map(lambda p: _read_entry(storage, p), [k[0] for k in new]))
    bad = set()
    for k, text in zip(new, texts, strict=True):
        try:
            if isinstance(text, NotAFileError):
                raise IntegrityError(str(text))
            seen[k] = log_entry(k[0], text)
        except IntegrityError as e:  # one bad entry must not hide the log, nor every SQL
            bad.add(k)  # query of the root (QA hostile65)
            if k not in _WARNED:
                _WARNED.add(k)
                warnings.warn(f"{e}; it is left out (written outside dload: delete it)",
                              stacklevel=user_stacklevel())
    if len(seen) > _SEEN_MAX:  # (a process reading many datasets' logs: the oldest out)
        for k in list(seen)[:len(seen) - _SEEN_MAX]:
            del seen[k]
    return sorted((seen.get(k) or log_entry(k[0], storage.read(k[0])) for k in listed
                   if k not in bad), key=lambda e: (e.time, e.ref, e.seq))


_WARNED: set[tuple[str, int, float, str]] = set()  # malformed entries warned of


def _read_entry(storage: Storage, path: str) -> bytes | NotAFileError:
    """The entry's bytes; a FIFO in its place (QA review65c: it failed every SQL query) is
    returned, to be left out and warned of like a malformed entry."""
    try:
        return storage.read(path)
    except NotAFileError as e:
        return e


_SEEN_MAX = 100_000  # log entries a process keeps read (~900 bytes each, with their keys)


def log_entry(path: str, text: bytes | str) -> LogEntry:
    """The entry at ``path`` whose bytes are ``text``; IntegrityError when malformed."""
    try:
        e = json.loads(text)
        entry = LogEntry(
            ref=str(e["ref"]), seq=int(e["seq"]), version=e.get("version"),
            previous=e.get("previous"), user=str(e.get("user", "")),
            host=str(e.get("host", "")), time=float(e.get("time", 0.0)),
            action=str(e.get("action", "")),
        )
        if not (0 <= entry.seq < 2**63 and EPOCHS[0] < entry.time < EPOCHS[1]) or not all(
                v is None or isinstance(v, str) for v in (entry.version, entry.previous)):
            raise ValueError("a field out of range or of another type")
        return entry
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError,
            OverflowError) as err:  # (a list, nested 100,000 deep, 1e999: QA hostile65)
        raise IntegrityError(f"log entry {path} is malformed: {err}") from err


EPOCHS = (-62135596800.0, 253402300799.0)  # years 1 to 9999: a time a record may hold
