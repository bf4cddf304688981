"""What a lineage needs of each version, kept by version id: a manifest never changes.

``dload log`` must know every version's parents (a descendant may be in any dataset) and its
shards' digests (the versions sharing shards may too), not the rest of every manifest. A
:class:`Summary` holds a version's ``dload_raw_versions`` row, its ``dload_raw_parents`` rows
and its shards' digests and sizes. Summaries live in memory and in one file per root,
``<cache_dir>/catalog/<root>/versions.json``, so a new process reads that file rather than
every manifest; a manifest is read (through the manifest cache) only for a version the file
lacks. The file's first line is the sha256 of the rest: a damaged file is ignored and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dload_arrow.catalog.tables import RAW_SCHEMAS, parent_rows, version_row
from dload_arrow.errors import IntegrityError, InvalidNameError, user_stacklevel
from dload_arrow.storage.local import mode_like_open
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.manifest_cache import ManifestCache, root_id

__all__ = ["Summaries", "Summary"]

_FORMAT = 1
_VERSION_COLUMNS = set(RAW_SCHEMAS["dload_raw_versions"].names)


@dataclass(frozen=True)
class Summary:
    """One version: its raw ``versions`` row, raw ``parents`` rows and shards' digests/bytes."""

    row: dict[str, Any]
    parents: list[dict[str, Any]]
    digests: list[str]
    sizes: list[int]

    @property
    def name(self) -> str:
        return str(self.row["name"])

    @classmethod
    def of(cls, name: str, vid: str, m: Manifest) -> Summary:
        return cls(version_row(name, vid, m), parent_rows(name, vid, m),
                   [str(d) for d in m.table.column("digest").to_pylist()],
                   [int(b) for b in m.table.column("bytes").to_pylist()])

    def to_json(self) -> list[Any]:
        return [self.row, self.parents, self.digests, self.sizes]

    @classmethod
    def from_json(cls, vid: str, data: Any) -> Summary:
        row, parents, digests, sizes = data
        if (not isinstance(row, dict) or set(row) != _VERSION_COLUMNS or row["version"] != vid
                or not all(isinstance(p, dict) and p.get("version") == vid for p in parents)
                or len(digests) != len(sizes)):
            raise ValueError(f"bad summary of {vid}")
        return cls(row, list(parents), [str(d) for d in digests], [int(b) for b in sizes])


class Summaries:
    """:class:`Summary` objects by version id: memory, then the file, then the manifest."""

    def __init__(self, manifests: ManifestCache, cache_dir: str | os.PathLike[str]) -> None:
        self.manifests = manifests
        self.path = Path(cache_dir) / "catalog" / root_id(manifests.storage) / "versions.json"
        self._memory: dict[str, Summary] | None = None
        self.built = 0  # summaries made from manifests (tests count these)

    def of(self, listed: list[tuple[str, str]]) -> dict[tuple[str, str], Summary]:
        """The summaries of the ``(name, vid)`` manifests ``listed`` (a root's listing)."""
        memory = self._load()
        out: dict[tuple[str, str], Summary] = {}
        added = False
        strays: set[str] = set()  # folders copied or renamed outside dload (QA review65)
        for name, vid in listed:
            got = memory.get(vid)
            if got is None or got.name != name:
                # the manifest cache checks the name the manifest holds, as the catalog does
                try:
                    m = self.manifests.get(name, vid)
                except (IntegrityError, InvalidNameError) as e:  # one bad object must not
                    copy = isinstance(e, InvalidNameError)  # hide the root (a copied folder:
                    if not (copy and name in strays):  # warned once; its own versions, if
                        what = f"manifests in the folder of {name!r}" if copy else \
                            f"a version of {name!r}"  # copies were merged into it, stay: 65b)
                        warnings.warn(f"the catalog leaves out {what}: {e}",
                                      stacklevel=user_stacklevel())
                    strays.update([name] if copy else [])
                    continue
                got = memory[vid] = Summary.of(name, vid, m)
                self.built += 1
                added = True
            out[(name, vid)] = got
        if added:
            self._save({vid for _, vid in listed})
        return out

    def _load(self) -> dict[str, Summary]:
        if self._memory is None:
            self._memory = {}
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError, AttributeError):
                digest, _, body = self.path.read_bytes().partition(b"\n")
                if hashlib.sha256(body).hexdigest().encode() != digest:
                    raise ValueError("damaged summary file")
                data = json.loads(body)
                if data.get("format") != _FORMAT:
                    raise ValueError("summary file of another format")
                self._memory = {vid: Summary.from_json(vid, s)
                                for vid, s in data["versions"].items()}
        return self._memory

    def _save(self, keep: set[str]) -> None:
        """Write the summaries of the versions in ``keep`` (the others were removed)."""
        memory = self._load()
        body = json.dumps({"format": _FORMAT, "versions": {
            vid: s.to_json() for vid, s in sorted(memory.items()) if vid in keep}},
            separators=(",", ":")).encode()
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".versions.", suffix=".tmp")
            mode_like_open(fd)  # a team's shared cache: readable by the group
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
            os.replace(tmp, self.path)
        except OSError:  # a read-only or full cache only costs reading manifests next time
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
