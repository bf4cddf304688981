"""Removal records: the lineage edges of a removed version, kept after its manifest is gone.

A version's parents live in its manifest, which is immutable (its hash is the version id), so
a version appended to or derived from a removed one cannot be rewritten to skip it. Instead
``rm`` writes ``datasets/<name>/removed/<vid>.json`` before it deletes the manifest: the
removed version's parents (as its manifest held them), its row count, who removed it and when.
The catalog reads these edges as it reads a manifest's, for versions whose manifest is gone,
so the lineage of v3 still reaches v1 through a removed v2.

A record is written once (``put_if_absent``) and never changed: the same version id always has
the same parents. A root written before records existed has none; lineage then stops at the
removed version, as it did. ``gc`` never deletes them (they reference no shard) and ``rm`` of
a whole dataset keeps them with its log.
"""

from __future__ import annotations

import getpass
import json
import socket
import time
from dataclasses import dataclass
from typing import Any

from dload_arrow.errors import DloadError, IntegrityError
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import check_digest, check_name

__all__ = ["REMOVED", "Removal", "parse_removal", "record_removal", "removal_path"]

REMOVED = "removed"
"""The folder under ``datasets/<name>/`` holding the records."""

_FORMAT = 1


@dataclass(frozen=True)
class Removal:
    """One removed version: its parents (``name``, ``version``, ``relation``,
    ``fingerprint``, as a manifest holds them) and its row count."""

    name: str
    version: str
    parents: list[dict[str, Any]]
    num_rows: int | None


def removal_path(name: str, version: str) -> str:
    """Where the record of ``name`` at ``version`` lives under the root."""
    return f"datasets/{check_name(name)}/{REMOVED}/{check_digest(version, 'version id')}.json"


def record_removal(storage: Storage, name: str, version: str, manifest: Manifest) -> None:
    """Write the record of ``version`` (before its manifest is deleted); an existing record
    (an rm run again, or a version removed, committed again and removed) is kept."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    parents = [{"name": p["name"], "version": p["version"],
                "relation": p.get("relation") or "parent",
                "fingerprint": None if p.get("fingerprint") is None else str(p["fingerprint"])}
               for p in manifest.parents]
    body = {"format": _FORMAT, "name": name, "version": version, "parents": parents,
            "num_rows": manifest.num_rows, "user": user, "host": socket.gethostname(),
            "time": time.time()}
    storage.put_if_absent(removal_path(name, version),
                          json.dumps(body, sort_keys=True).encode())


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
        rows = obj.get("num_rows")
        return Removal(name, version, parents, None if rows is None else int(rows))
    except (ValueError, KeyError, TypeError, AttributeError, DloadError) as e:
        raise IntegrityError(f"removal record {where} is malformed: {e}; delete it (the "
                             "lineage then stops at that removed version)") from e
