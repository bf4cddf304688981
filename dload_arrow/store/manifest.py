"""Manifests: one Arrow IPC file per version, one row per shard.

The file's bytes name the version (sha256), so nothing time- or host-dependent goes in.
Columns: ``digest, bytes, rows, row_offset, footer_offset, rg_rows, rg_offsets, rg_bytes,
key_min, key_max, rg_key_min, rg_key_max`` and, per scalar sample column ``c``,
``min.c, max.c, nulls.c, rg_min.c, rg_max.c, rg_nulls.c``; per other sample column (binary,
tensors, lists: no min or max) ``nulls.c, rg_nulls.c`` (manifests written before dload_arrow
recorded them lack these; readers treat the counts as unknown). Schema metadata ``dload`` holds
JSON: format, name, sample schema (base64 Arrow IPC), meta, recipe, parents, key index (one
part: an object, format 1; several: a list of them, format 2, see ``store/key_index.py``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from dload_arrow.arrays import int64_array, numpy_values, typed_array
from dload_arrow.errors import ConfigError, IntegrityError
from dload_arrow.sizes import plural
from dload_arrow.store.manifest_check import (
    FORMAT_VERSION,
    KEY_INDEX_PARTS_FORMAT,
    TENSOR_BYTES_FORMAT,
    check_manifest,
)
from dload_arrow.store.manifest_meta import check_meta
from dload_arrow.store.names import KEY_COLUMN, check_name
from dload_arrow.store.shard import ShardData, is_scalar
from dload_arrow.store.tensor_layout import packable

__all__ = ["FORMAT_VERSION", "Manifest", "ShardEntry", "build_manifest", "check_meta",
           "shard_rows"]

_META_KEY = b"dload"


@dataclass(frozen=True)
class ShardEntry:
    """What a reader needs to know about one shard of a version."""

    index: int
    digest: str
    bytes: int
    rows: int
    row_offset: int
    footer_offset: int
    rg_rows: tuple[int, ...]
    rg_offsets: tuple[int, ...]
    rg_bytes: tuple[int, ...]
    key_min: str
    key_max: str


def _schema_to_b64(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def _schema_from_b64(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def shard_rows(shards: Sequence[ShardData], schema: pa.Schema) -> pa.Table:
    """Manifest rows for freshly written shards (``row_offset`` is filled in later)."""
    cols: dict[str, pa.Array] = {
        "digest": typed_array([s.digest for s in shards], pa.string()),
        "bytes": typed_array([s.nbytes for s in shards], pa.int64()),
        "rows": typed_array([s.rows for s in shards], pa.int64()),
        "row_offset": typed_array([0] * len(shards), pa.int64()),
        "footer_offset": typed_array([s.footer_offset for s in shards], pa.int64()),
        "rg_rows": typed_array([s.rg_rows for s in shards], pa.list_(pa.int64())),
        "rg_offsets": typed_array([s.rg_offsets for s in shards], pa.list_(pa.int64())),
        "rg_bytes": typed_array([s.rg_bytes for s in shards], pa.list_(pa.int64())),
        "key_min": typed_array([s.key_min for s in shards], pa.string()),
        "key_max": typed_array([s.key_max for s in shards], pa.string()),
        "rg_key_min": typed_array([s.rg_key_min for s in shards], pa.list_(pa.string())),
        "rg_key_max": typed_array([s.rg_key_max for s in shards], pa.list_(pa.string())),
    }
    for f in schema:
        if f.name == "__key__":
            continue
        c, t = f.name, f.type
        if not is_scalar(t):
            cols[f"nulls.{c}"] = typed_array([sum(s.rg_nulls[c]) for s in shards], pa.int64())
            cols[f"rg_nulls.{c}"] = typed_array([s.rg_nulls[c] for s in shards],
                                                pa.list_(pa.int64()))
            continue
        # times are stored as ticks (store/shard.py), cast to the column's type here
        ticks = pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t)
        st = (pa.int32() if t.bit_width == 32 else pa.int64()) if ticks else t
        cols[f"min.{c}"] = typed_array([s.stats[c][0] for s in shards], st).cast(t)
        cols[f"max.{c}"] = typed_array([s.stats[c][1] for s in shards], st).cast(t)
        cols[f"nulls.{c}"] = typed_array([s.stats[c][2] for s in shards], pa.int64())
        cols[f"rg_min.{c}"] = typed_array([[x[0] for x in s.rg_stats[c]] for s in shards],
                                          pa.list_(st)).cast(pa.list_(t))
        cols[f"rg_max.{c}"] = typed_array([[x[1] for x in s.rg_stats[c]] for s in shards],
                                          pa.list_(st)).cast(pa.list_(t))
        cols[f"rg_nulls.{c}"] = typed_array(
            [[x[2] for x in s.rg_stats[c]] for s in shards], pa.list_(pa.int64())
        )
    return pa.table(cols)


def build_manifest(
    name: str,
    schema: pa.Schema,
    rows: pa.Table,
    *,
    keys_sorted: bool,
    meta: dict[str, Any] | None = None,
    recipe: str | None = None,
    parents: Sequence[dict[str, Any]] = (),
    key_index: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
    settings: dict[str, Any] | None = None,
) -> Manifest:
    """Assemble a manifest; its bytes (and so its version id) depend only on the arguments.

    ``key_index``: its part, or its parts in row order. One part is stored as an object in a
    format-1 manifest (as before parts existed); several as a list, in format 2. A schema with
    tensors that shards store as bytes makes it format 3, either way."""
    check_name(name)
    check_meta(meta, recipe)
    parts = [] if key_index is None else (
        [key_index] if isinstance(key_index, dict) else list(key_index))
    info = {
        "format": TENSOR_BYTES_FORMAT if packable(schema) else
        KEY_INDEX_PARTS_FORMAT if len(parts) > 1 else FORMAT_VERSION,
        "name": name,
        "schema": _schema_to_b64(schema),
        "meta": meta or {},
        "recipe": recipe,
        "parents": list(parents),
        "keys_sorted": keys_sorted,
        "key_index": (parts[0] if len(parts) == 1 else parts) if parts else None,
        "settings": settings or {},
    }
    try:
        text = json.dumps(info, sort_keys=True, separators=(",", ":"))
    except TypeError as e:
        raise ConfigError(
            f"meta must be JSON-serialisable (str, numbers, bools, None, lists and dicts of "
            f"them): {e}"
        ) from e
    counts = numpy_values(rows.column("rows").combine_chunks()).astype(np.int64)
    offsets = int64_array(np.concatenate([[0], np.cumsum(counts)])[:-1])
    rows = rows.set_column(rows.schema.get_field_index("row_offset"), "row_offset", offsets)
    rows = rows.combine_chunks().replace_schema_metadata({_META_KEY: text.encode()})
    return Manifest(rows)


class Manifest:
    """A parsed, validated manifest. ``Manifest.from_bytes`` is the only way in from storage."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        raw = (table.schema.metadata or {}).get(_META_KEY)
        if raw is None:
            raise IntegrityError("manifest has no 'dload' metadata: not a dload_arrow manifest")
        try:
            self.info: dict[str, Any] = json.loads(raw)
        except (ValueError, RecursionError) as e:  # (nested 100,000 deep: QA hostile65)
            raise IntegrityError(f"manifest metadata is not JSON: {e}") from e
        self._validate()

    def _validate(self) -> None:
        check_manifest(self.info, self.table)
        try:
            self.schema  # noqa: B018 (decoded once, cached)
        except Exception as e:
            raise IntegrityError(f"manifest's sample schema does not decode ({e!r}): the "
                                 "manifest is corrupt") from e
        first = self.schema[0] if len(self.schema) else None
        if first is None or first.name != KEY_COLUMN or not pa.types.is_string(first.type):
            got = "nothing" if first is None else f"{first.name!r} ({first.type})"
            raise IntegrityError(f"manifest's sample schema begins with {got}, not the string "
                                 "column '__key__' every dload manifest begins with: the "
                                 "manifest was not written by dload or is corrupt")

    def __repr__(self) -> str:
        rows = f"{self.num_rows:,} row{'' if self.num_rows == 1 else 's'}"
        shards = plural(len(self.shards), "shard")
        return f"Manifest({self.name!r}, {self.version[:12]}, {rows}, {shards})"

    def to_bytes(self) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, self.table.schema) as w:
            w.write_table(self.table)
        return sink.getvalue().to_pybytes()

    @cached_property
    def version(self) -> str:
        """The version id: sha256 of the manifest's bytes."""
        return hashlib.sha256(self.to_bytes()).hexdigest()

    @classmethod
    def from_bytes(cls, data: bytes, expected_version: str | None = None) -> Manifest:
        """Parse and validate; with ``expected_version`` the bytes must hash to it."""
        if expected_version is not None:
            got = hashlib.sha256(data).hexdigest()
            if got != expected_version:
                raise IntegrityError(
                    f"manifest {expected_version[:12]} is corrupt: its bytes hash to {got[:12]}"
                )
        try:
            table = pa.ipc.open_file(pa.py_buffer(data)).read_all()
        except (pa.ArrowInvalid, OSError) as e:
            raise IntegrityError(f"manifest is not an Arrow IPC file: {e}") from e
        m = cls(table)
        if expected_version is not None:
            m.__dict__["version"] = expected_version
        return m

    @property
    def name(self) -> str:
        return str(self.info["name"])

    @cached_property
    def schema(self) -> pa.Schema:
        """The sample schema (``__key__`` first)."""
        return _schema_from_b64(self.info["schema"])

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.info.get("meta") or {}
        # older versions stored any JSON value: show it rather than fail on it
        return dict(meta) if isinstance(meta, dict) else {"meta": meta}

    @property
    def recipe(self) -> str | None:
        return self.info.get("recipe")

    @property
    def parents(self) -> list[dict[str, Any]]:
        return list(self.info.get("parents") or [])

    @property
    def keys_sorted(self) -> bool:
        return bool(self.info.get("keys_sorted"))

    @property
    def key_index(self) -> dict[str, Any] | list[dict[str, Any]] | None:
        """As stored: None, one part (an object) or, in format 2, a list of parts."""
        return self.info.get("key_index")

    @property
    def key_index_parts(self) -> list[dict[str, Any]]:
        """The key index's parts in row order (none when keys are sorted): each a Parquet
        object of sorted ``__key__`` and global ``row``, with its row-group layout."""
        idx = self.key_index
        return [] if idx is None else [idx] if isinstance(idx, dict) else list(idx)

    @property
    def num_rows(self) -> int:
        return int(sum(self.table.column("rows").to_pylist()))

    @property
    def num_bytes(self) -> int:
        return int(sum(self.table.column("bytes").to_pylist()))

    @cached_property
    def shards(self) -> list[ShardEntry]:
        t = self.table
        cols = {n: t.column(n).to_pylist() for n in (
            "digest", "bytes", "rows", "row_offset", "footer_offset", "rg_rows",
            "rg_offsets", "rg_bytes", "key_min", "key_max")}
        return [
            ShardEntry(
                index=i, digest=cols["digest"][i], bytes=cols["bytes"][i], rows=cols["rows"][i],
                row_offset=cols["row_offset"][i], footer_offset=cols["footer_offset"][i],
                rg_rows=tuple(cols["rg_rows"][i]), rg_offsets=tuple(cols["rg_offsets"][i]),
                rg_bytes=tuple(cols["rg_bytes"][i]), key_min=cols["key_min"][i],
                key_max=cols["key_max"][i],
            )
            for i in range(t.num_rows)
        ]

    def digests(self) -> list[str]:
        """Every object this version references: shards and the key index's parts."""
        out = list(self.table.column("digest").to_pylist())
        out.extend(p["digest"] for p in self.key_index_parts)
        return out
