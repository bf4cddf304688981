"""Removal records: the lineage edges of a removed version, kept after its manifest is gone.

A version's parents live in its manifest, which is immutable (its hash is the version id), so
a version appended to or derived from a removed one cannot be rewritten to skip it. Instead
``rm`` writes ``datasets/<name>/removed/<vid>.json`` before it deletes the manifest: the
removed version's parents (as its manifest held them), its row count, who removed it and when.
The catalog reads these edges as it reads a manifest's, for versions whose manifest is gone,
so the lineage of v3 still reaches v1 through a removed v2.

A record is written once (``put_if_absent``) and never changed: the same version id always has
the same parents. A version removed, published again (the same data committed) and removed
again gets one more record, ``<vid>.<n>.json`` (n = 2, 3, ...), so the log shows each removal;
an rm run again without a publish in between writes none. A root written before records
existed has none; lineage then stops at the removed version, as it did. ``gc`` never deletes
them (they reference no shard) and ``rm`` of a whole dataset keeps them with its log.
"""

from __future__ import annotations

import getpass
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dload_arrow.errors import ConfigError, DloadError, IntegrityError, NotFoundError
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import check_digest, check_name
from dload_arrow.store.ref_log import EPOCHS
from dload_arrow.store.refs import read_log

__all__ = ["REMOVED", "Removal", "gone_hint", "known_version", "parse_removal",
           "record_file", "record_removal", "removal_path", "when_text"]

REMOVED = "removed"
"""The folder under ``datasets/<name>/`` holding the records."""

_FORMAT = 1


@dataclass(frozen=True)
class Removal:
    """One removed version: its parents (``name``, ``version``, ``relation``,
    ``fingerprint``, as a manifest holds them), its row count, and when (seconds since the
    epoch), by whom and from which host it was removed (None where not recorded)."""

    name: str
    version: str
    parents: list[dict[str, Any]]
    num_rows: int | None
    time: float | None = None
    user: str | None = None
    host: str | None = None


def removal_path(name: str, version: str, again: int = 0) -> str:
    """Where the record of ``name`` at ``version`` lives under the root (``again``: the
    number of a later removal's record, 2 and up)."""
    base = f"datasets/{check_name(name)}/{REMOVED}/{check_digest(version, 'version id')}"
    return f"{base}.{again}.json" if again else f"{base}.json"


def record_file(filename: str) -> tuple[str, int] | None:
    """``(version id, again)`` of a record's file name (``<vid>.json``: 0, ``<vid>.<n>.json``:
    n), or None for another name."""
    vid, dot, n = filename.removesuffix(".json").partition(".")
    if not filename.endswith(".json") or (dot and not (n.isdigit() and int(n) >= 2)):
        return None
    try:
        check_digest(vid, "version id")
    except DloadError:
        return None
    return vid, int(n) if dot else 0


def record_removal(storage: Storage, name: str, version: str, manifest: Manifest) -> None:
    """Write the record of ``version`` (before its manifest is deleted); an existing record
    (an rm run again) is kept, and a version published again since its last record gets one
    more."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    parents = [{"name": p["name"], "version": p["version"],
                "relation": p.get("relation") or "parent",
                "fingerprint": None if p.get("fingerprint") is None else str(p["fingerprint"])}
               for p in manifest.parents]
    body = json.dumps({
        "format": _FORMAT, "name": name, "version": version, "parents": parents,
        "num_rows": manifest.num_rows, "user": user, "host": socket.gethostname(),
        "time": time.time()}, sort_keys=True).encode()
    if storage.put_if_absent(removal_path(name, version), body):
        return
    # One record per time latest was moved to the version: a removal after a republish gets
    # one more, an rm run again none (counted, not timed: clocks of two writers may differ).
    numbers = _record_numbers(storage, name, version)
    published = sum(1 for e in read_log(storage, name)
                    if e.ref == "latest" and e.version == version)
    if published > len(numbers):
        storage.put_if_absent(removal_path(name, version, max(max(numbers), 1) + 1), body)


def _record_numbers(storage: Storage, name: str, version: str) -> list[int]:
    """The numbers of the removal records of ``version`` stored (0 for the first), readable
    or not."""
    return [found[1] for obj in storage.list(f"datasets/{name}/{REMOVED}/")
            if (found := record_file(obj.path.rsplit("/", 1)[-1])) is not None
            and found[0] == version]


def parse_removal(name: str, version: str, data: bytes, where: str) -> Removal:
    """The record ``data`` read at ``where``, checked as a manifest's parents are (nothing read
    from the root is trusted): IntegrityError when it is not one dload wrote."""
    try:
        obj = json.loads(data)
        if obj["name"] != name or obj["version"] != version:
            raise ValueError(f"it names {obj['name']!r} @ {obj['version']!r}")
        parents = []
        for p in obj["parents"]:
            fingerprint, relation = p.get("fingerprint"), p.get("relation")
            if not isinstance(relation, str) or not isinstance(fingerprint, (str, type(None))):
                raise ValueError(f"parent {p!r} has a bad relation or fingerprint")
            parents.append({"name": check_name(p["name"]),
                            "version": check_digest(p["version"], "parent version"),
                            "relation": relation, "fingerprint": fingerprint})
        rows, when = obj.get("num_rows"), obj.get("time")
        user, host = obj.get("user"), obj.get("host")
        if when is not None and not EPOCHS[0] < float(when) < EPOCHS[1]:
            raise ValueError(f"its time {when!r} is out of range")  # (QA review65c: 1e999)
        return Removal(name, version, parents, None if rows is None else int(rows),
                       None if when is None else float(when),
                       None if user is None else str(user), None if host is None else str(host))
    except (ValueError, KeyError, TypeError, AttributeError, DloadError, RecursionError,
            OverflowError) as e:
        raise IntegrityError(f"removal record {where} is malformed: {e}; delete it (the "
                             "lineage then stops at that removed version)") from e


def known_version(storage: Storage, name: str, version: str | None,
                  resolve: Callable[[str, str | None], str],
                  stored: Callable[[str], list[str]]) -> str:
    """The version id a lineage of ``name`` at ``version`` is about: a stored version or ref
    (``resolve``), or a removed version its log or a removal record knows, also by a prefix
    of its id (``dload log a@d07fa0d513cb`` after ``rm``). NotFoundError for one it never had.
    """
    try:
        vid = resolve(name, version)
        found = None
    except NotFoundError as e:
        if not version:
            raise
        found = e
        vid = version.lower()
    if found is None and vid in stored(name):
        return vid
    logged = {v for e in read_log(storage, name) for v in (e.version, e.previous) if v}
    logged |= {rec[0] for o in storage.list(f"datasets/{name}/{REMOVED}/")
               if (rec := record_file(o.path.rsplit("/", 1)[-1])) is not None}
    matches = sorted(v for v in logged if v.startswith(vid))
    if len(matches) > 1 and vid not in matches:
        raise ConfigError(f"{version!r} is the start of {len(matches)} versions of {name!r} "
                          f"({', '.join(m[:16] for m in matches[:3])}); give more of the id")
    if not matches:
        if found is not None:
            raise found
        raise NotFoundError(f"{name!r} never had version {vid[:12]} (not stored, not in its "
                            f"log); `dload versions {name}` lists its versions")
    return vid if vid in matches else matches[0]


def when_text(t: float | None) -> str:
    """A removal's or a ref move's time, as messages give it (UTC, to the minute)."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else "at a time not recorded"


def gone_hint(storage: Storage, name: str, version: str) -> str:
    """What ``name``'s log and removal records say about ``version`` (a tag, or an id or id
    prefix) that it no longer has, as a sentence; "" when they know nothing of it."""
    moves = [e for e in read_log(storage, name) if e.ref == version]
    if moves and moves[-1].action == "delete":
        e = moves[-1]
        was = f", when it pointed at {e.previous[:12]}" if e.previous else ""
        return (f"tag {version!r} was deleted by {e.user or 'unknown'} ({when_text(e.time)}){was}; "
                f"`dload log {name}` shows every move")
    prefix = version.lower()
    if len(prefix) < 4 or any(c not in "0123456789abcdef" for c in prefix):
        return ""
    found = sorted(f for obj in storage.list(f"datasets/{name}/{REMOVED}/")
                   if (f := record_file(obj.path.rsplit("/", 1)[-1])) is not None
                   and f[0].startswith(prefix))
    if not found:
        return ""
    vid = found[0][0]
    again = max(n for v, n in found if v == vid)  # the last removal
    path = removal_path(name, vid, again)
    try:
        r = parse_removal(name, vid, storage.read(path), path)
    except (DloadError, OSError):
        return f"version {vid[:12]} was removed"
    return (f"version {vid[:12]} was removed by {r.user or 'unknown'} ({when_text(r.time)}); "
            f"`dload log {name}@{vid[:12]}` shows its lineage")
