"""The raw Arrow tables the catalog views read: one snapshot of a root's manifests and refs.

One listing of ``datasets/`` finds every manifest, ref and log entry. Manifests and log
entries never change once written, so they are read once per :class:`Snapshotter` (manifests
also once per machine, through :class:`ManifestCache`); refs move, so they are read each time.
Paths that do not parse as valid names are ignored: nothing under the root is trusted."""

from __future__ import annotations

import json
import warnings
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.arrays import int64_array, typed_array
from dload_arrow.catalog.root_listing import list_root, log_row, read_all, read_bytes
from dload_arrow.errors import (
    IntegrityError,
    InvalidNameError,
    NotFoundError,
    user_stacklevel,
)
from dload_arrow.storage import Storage
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.manifest_cache import ManifestCache
from dload_arrow.store.names import KEY_COLUMN, manifest_path
from dload_arrow.store.refs import read_ref
from dload_arrow.store.removals import Removal, parse_removal, removal_path

__all__ = ["RAW_SCHEMAS", "Snapshot", "Snapshotter", "list_root", "parent_rows", "raw_table",
           "shard_table", "version_row"]

_TS = pa.timestamp("us", tz="UTC")

RAW_SCHEMAS: dict[str, pa.Schema] = {
    "dload_raw_versions": pa.schema([
        ("name", pa.string()), ("version", pa.string()), ("num_rows", pa.int64()),
        ("num_bytes", pa.int64()), ("num_shards", pa.int64()), ("num_row_groups", pa.int64()),
        ("columns", pa.list_(pa.string())), ("keys_sorted", pa.bool_()),
        ("meta", pa.string()), ("recipe", pa.string()),
    ]),
    "dload_raw_shards": pa.schema([
        ("name", pa.string()), ("version", pa.string()), ("shard", pa.int32()),
        ("digest", pa.string()), ("bytes", pa.int64()), ("rows", pa.int64()),
        ("row_offset", pa.int64()), ("row_groups", pa.int32()), ("key_min", pa.string()),
        ("key_max", pa.string()),
    ]),
    "dload_raw_parents": pa.schema([
        ("name", pa.string()), ("version", pa.string()), ("parent_name", pa.string()),
        ("parent_version", pa.string()), ("relation", pa.string()),
        ("fingerprint", pa.string()),
    ]),
    "dload_raw_refs": pa.schema([
        ("name", pa.string()), ("ref", pa.string()), ("version", pa.string()),
        ("seq", pa.int64()),
    ]),
    "dload_raw_log": pa.schema([
        ("name", pa.string()), ("ref", pa.string()), ("seq", pa.int64()), ("time", _TS),
        ("action", pa.string()), ("version", pa.string()), ("previous", pa.string()),
        ("user", pa.string()), ("host", pa.string()),
    ]),
}


@dataclass(frozen=True)
class Snapshot:
    """The raw tables (by registered name) and the versions listed, their manifests read on
    demand (holding them all made memory grow with the square of the appends)."""

    tables: dict[str, pa.Table]
    manifests: Mapping[tuple[str, str], Manifest]


class Listed(Mapping[tuple[str, str], Manifest]):
    """The manifests of a snapshot's versions, read through the manifest cache when looked up
    (holding every one made memory grow with the square of the appends: QA scale62)."""

    def __init__(self, keys: frozenset[tuple[str, str]], cache: ManifestCache) -> None:
        self.keys_, self.cache = keys, cache

    def __getitem__(self, key: tuple[str, str]) -> Manifest:
        if key not in self.keys_:
            raise KeyError(key)
        return self.cache.get(*key)

    def __contains__(self, key: object) -> bool:
        return key in self.keys_

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(sorted(self.keys_))

    def __len__(self) -> int:
        return len(self.keys_)


class Snapshotter:
    """Builds :class:`Snapshot` objects of one root, remembering immutable objects."""

    def __init__(self, storage: Storage, manifests: ManifestCache) -> None:
        self.storage = storage
        self.manifests = manifests
        self._log_entries: dict[str, dict[str, Any] | None] = {}
        self._removed: dict[tuple[str, str], Removal | None] = {}
        self._warned: set[str] = set()  # copied dataset folders warned of
        # each version's rows of dload_raw_versions, _parents and _shards (read once: a
        # manifest never changes; its Arrow shard rows hold less than the manifest itself)
        self._rows: dict[tuple[str, str], tuple[dict[str, Any], list[dict[str, Any]],
                                                pa.Table]] = {}
        # The tables of the last snapshot, by its set of manifests: a query over an unchanged
        # set reuses them (rebuilding them per query was 1 s for `select 1` over 1,000
        # appended versions).
        self._built: tuple[frozenset[tuple[str, str]], dict[str, pa.Table]] | None = None

    def snapshot(self) -> Snapshot:
        """List the root once and build every raw table (the manifests' only when they
        changed since the last snapshot)."""
        found = list_root(self.storage)
        listed = [node for node in found["manifests"] if self._read(node, warn=True)]
        refs = self.refs(found["refs"])  # read after the listing: a ref may name a version
        seen = set(listed)  # and a version committed since, whose manifest the views need
        listed += [node for node in zip(refs.column("name").to_pylist(),
                                        refs.column("version").to_pylist(), strict=True)
                   if node not in seen and self._read(node, warn=False)]
        key = frozenset(listed)
        if self._built is None or self._built[0] != key:
            self._rows = {node: self._rows[node] for node in key}  # (removed ones dropped)
            nodes = sorted(key)
            self._built = (key, {
                "dload_raw_versions": raw_table([self._rows[n][0] for n in nodes],
                                                "dload_raw_versions"),
                "dload_raw_parents": raw_table([p for n in nodes for p in self._rows[n][1]],
                                               "dload_raw_parents"),
                "dload_raw_shards": pa.concat_tables(  # (no copy: a chunk per version)
                    [raw_table([], "dload_raw_shards")] + [self._rows[n][2] for n in nodes])})
        manifests = Listed(key, self.manifests)
        tables = {
            **self._built[1],
            "dload_raw_parents": pa.concat_tables([
                self._built[1]["dload_raw_parents"],
                raw_table([p for rows in self.removed(found, manifests).values() for p in rows],
                          "dload_raw_parents")]),
            "dload_raw_refs": refs,
            "dload_raw_log": self.log(found["log"], found["removed"] + found["removed_again"]),
        }
        return Snapshot(tables=tables, manifests=manifests)

    def _read(self, node: tuple[str, str], *, warn: bool) -> bool:
        """Whether the manifest of ``node`` reads (its rows kept); a damaged one is warned of
        (one bad object must not hide the root, nor its fix) when ``warn``."""
        if node not in self._rows:
            try:  # (not kept in memory: its rows are, QA scale62's 1,100 appends)
                m = self.manifests.get(*node, keep=False)
            except (IntegrityError, InvalidNameError) as e:  # (the latter: a copied
                copy = isinstance(e, InvalidNameError)  # dataset folder: QA docs64; a copy
                if warn and not (copy and node[0] in self._warned):  # once, review64h; a
                    self._warned.update([node[0]] if copy else [])  # damaged version each
                    what = "manifests in the folder of" if copy else "a version of"  # (64i/j)
                    warnings.warn(f"the catalog leaves out {what} {node[0]!r}: {e}",
                                  stacklevel=user_stacklevel())
                return False
            except NotFoundError:  # (removed since the listing: an rm, an append's lost
                if warn and self.storage.exists(manifest_path(*node)):  # race's own, which
                    raise  # it deletes: QA threads66, every query failed at random)
                return False
            self._rows[node] = (version_row(*node, m), parent_rows(*node, m),
                                shard_table(*node, m))
        return True

    def refs(self, refs: list[tuple[str, str]]) -> pa.Table:
        """``dload_raw_refs`` of ``(name, ref)`` pairs, read now (refs move)."""
        rows = []  # (several GETs at once: QA scale62, 1,050 refs read one by one on S3)
        for (name, ref), value in zip(refs, read_all(lambda r: read_ref(self.storage, *r),
                                                     refs), strict=True):
            if isinstance(value, IntegrityError):  # one damaged ref must not fail every query
                warnings.warn(f"the catalog leaves out ref {ref!r} of {name!r}: {value}",
                              stacklevel=user_stacklevel())
                continue
            if isinstance(value, BaseException):
                raise value
            if value is not None:
                rows.append({"name": name, "ref": ref, "version": value.version,
                             "seq": value.seq})
        return raw_table(rows, "dload_raw_refs")

    def removed(self, found: dict[str, list[tuple[str, str]]],
                stored: Container[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """The ``dload_raw_parents`` rows of each removed version (by ``(name, vid)``) of
        ``found`` (a listing) whose manifest is not in ``stored``: a version committed again
        has its manifest's edges."""
        wanted = [node for node in found["removed"] if node not in stored]
        return {node: [{"name": r.name, "version": r.version, "parent_name": p["name"],
                        "parent_version": p["version"], "relation": p["relation"],
                        "fingerprint": p["fingerprint"]} for p in r.parents]
                for node, r in self._records(wanted).items()}

    def _records(self, nodes: list[tuple[str, str]]) -> dict[tuple[str, str], Removal]:
        """The removal records of ``nodes`` (``(name, vid)``, or ``(name, "<vid>.<n>")`` for a
        later removal's), each read once (records never change)."""
        def path(node: tuple[str, str]) -> str:
            vid, _, again = node[1].partition(".")
            return removal_path(node[0], vid, int(again or 0))

        unread = [node for node in nodes if node not in self._removed]
        for node, data in zip(unread, read_all(lambda n: self.storage.read(path(n)), unread),
                              strict=True):  # one GET each, several at once
            try:
                self._removed[node] = parse_removal(node[0], node[1].partition(".")[0],
                                                    read_bytes(data), path(node))
            except IntegrityError as e:  # one bad record must not fail every query (65c)
                warnings.warn(f"the catalog leaves out {e}", stacklevel=user_stacklevel())
                self._removed[node] = None
        return {n: r for n in nodes if (r := self._removed[n]) is not None}

    def log(self, paths: list[tuple[str, str]],
            removed: Sequence[tuple[str, str]] = ()) -> pa.Table:
        """``dload_raw_log`` of ``(name, path)`` pairs, each entry read once (never changed),
        and a row per removal record of ``removed`` (``(name, vid)``): ``rm`` of a version no
        ref points at moves no ref, but its record says when and by whom (ref null, action
        ``rm``, ``previous`` the removed version)."""
        unread = [(n, p) for n, p in paths if p not in self._log_entries]
        for (name, path), data in zip(unread, read_all(lambda e: self.storage.read(e[1]),
                                                       unread), strict=True):
            try:
                self._log_entries[path] = log_row(name, path, read_bytes(data))  # written once
            except IntegrityError as e:  # one bad entry must not fail every query (QA
                warnings.warn(f"the catalog leaves out {e}", stacklevel=user_stacklevel())
                self._log_entries[path] = None  # hostile65): warned once
        rows = [r for _, path in paths if (r := self._log_entries[path]) is not None]
        rows.extend({"name": r.name, "action": "rm", "previous": r.version,
                     "time": None if r.time is None else int(r.time * 1_000_000),
                     "user": r.user, "host": r.host}
                    for r in self._records(list(removed)).values())
        return raw_table(rows, "dload_raw_log")


def version_row(name: str, vid: str, m: Manifest) -> dict[str, Any]:
    """The ``dload_raw_versions`` row of one manifest."""
    entries = m.table
    return {
        "name": name, "version": vid, "num_rows": m.num_rows, "num_bytes": m.num_bytes,
        "num_shards": entries.num_rows,
        "num_row_groups": int(pc.sum(pc.list_value_length(entries.column("rg_rows"))).as_py()
                              or 0),
        "columns": [f.name for f in m.schema if f.name != KEY_COLUMN],
        "keys_sorted": m.keys_sorted,
        "meta": json.dumps(m.meta, sort_keys=True), "recipe": m.recipe,
    }


def shard_table(name: str, vid: str, m: Manifest) -> pa.Table:
    """The ``dload_raw_shards`` rows of one manifest, in shard order, from its Arrow columns
    (a dict per shard made 1,000 appended versions, 500,000 rows, take 7 s and 0.9 GB)."""
    t, schema = m.table, RAW_SCHEMAS["dload_raw_shards"]
    n = t.num_rows
    same = int64_array(np.zeros(n, dtype=np.int64))  # (pa.array() would import pandas)
    cols = [typed_array([name], pa.string()).take(same), typed_array([vid], pa.string()).take(
        same), int64_array(np.arange(n, dtype=np.int64))]
    cols += [t.column(c).combine_chunks() for c in ("digest", "bytes", "rows", "row_offset")]
    cols.append(pc.list_value_length(t.column("rg_rows").combine_chunks()))
    cols += [t.column(c).combine_chunks() for c in ("key_min", "key_max")]
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(cols, schema, strict=True)],
                                schema=schema)


def parent_rows(name: str, vid: str, m: Manifest) -> list[dict[str, Any]]:
    """The ``dload_raw_parents`` rows of one manifest (its lineage records)."""
    rows = []
    for p in m.parents:
        fingerprint = p.get("fingerprint")
        rows.append({
            "name": name, "version": vid, "parent_name": p["name"],
            "parent_version": p["version"], "relation": p.get("relation") or "parent",
            "fingerprint": None if fingerprint is None else str(fingerprint),
        })
    return rows


def raw_table(rows: list[dict[str, Any]], name: str) -> pa.Table:
    """The raw table ``name`` of ``rows`` (dicts by column; missing keys are null)."""
    schema = RAW_SCHEMAS[name]  # column by column: from_pylist would import pandas
    return pa.Table.from_arrays([typed_array([r.get(f.name) for r in rows], f.type)
                                 for f in schema], schema=schema)
