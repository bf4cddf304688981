"""Rows by position or by key, reading one row group per distinct (shard, row group) needed.

Positions map to (shard, row group, offset) from the manifest's row counts. Keys map through
the manifest's key ranges when the version's keys are globally sorted, and otherwise through
the key index (Parquet parts of sorted keys and global rows, ``store/key_index.py``): in each
part, a binary search over its row groups' key ranges picks at most one row group, read by
range (a key is looked up in the next part only while not found). Neither scans the dataset.

A filtered view (``units``, ``predicate``) is honoured: positions count only the view's rows,
and a key outside the view is not found.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dload_arrow.args import kind
from dload_arrow.arrays import int64_array, string_array
from dload_arrow.errors import MissingKeyError, shown
from dload_arrow.read.context import ReadContext
from dload_arrow.read.lookup_hints import cut, unicode_twin, warn_positions
from dload_arrow.read.random_access import RowGroupReader, ShardRef
from dload_arrow.read.reader import iter_units, projection
from dload_arrow.rowfilter import Predicate, filter_rows
from dload_arrow.store.manifest import Manifest
from dload_arrow.store.names import KEY_COLUMN

__all__ = ["RandomAccess"]

_Target = tuple[int, int, int | None, str | None]  # shard, row group, offset, key


class RandomAccess:
    """Random access into a version, or into a filtered view of it."""

    def __init__(self, ctx: ReadContext, manifest: Manifest,
                 units: Sequence[tuple[int, int]] | None = None,
                 predicate: Predicate | None = None) -> None:
        self.ctx = ctx
        self.manifest = manifest
        self.units = None if units is None else [(int(s), int(r)) for s, r in units]
        self.predicate = predicate
        self.reader = RowGroupReader(ctx)
        shards = manifest.shards
        self._row_offsets = [s.row_offset for s in shards]
        self._rg_starts = [np.concatenate([[0], np.cumsum(s.rg_rows)]).tolist() for s in shards]
        self._view_counts: list[int] | None = None
        self._told = False  # the take() warning (once)
        self._probing = threading.local()  # a twin probe's own miss looks for no twin
        # (lookup_hints.unicode_twin sets .on while it probes)

    @property
    def label(self) -> str:
        return f"{self.manifest.name}@{self.manifest.version[:12]}"

    # --- positions --------------------------------------------------------------------------

    def __len__(self) -> int:
        if self.units is None and self.predicate is None:
            return self.manifest.num_rows
        return int(sum(self._counts()))

    def _counts(self) -> list[int]:
        """Rows of each view unit (after the predicate: one pass over the view, once)."""
        if self._view_counts is None:
            units = self._units()
            if self.predicate is None:
                shards = self.manifest.shards
                self._view_counts = [shards[s].rg_rows[r] for s, r in units]
            else:
                self._view_counts = [
                    b.num_rows for b in iter_units(self.ctx, self.manifest, units,
                                                   columns=[KEY_COLUMN], predicate=self.predicate)
                ]
        return self._view_counts

    def _units(self) -> list[tuple[int, int]]:
        if self.units is not None:
            return self.units
        return [(s.index, r) for s in self.manifest.shards for r in range(len(s.rg_rows))]

    def _position(self, i: int) -> _Target:
        n = len(self)
        if not -n <= i < n:
            view = " (this view of it)" if self.units is not None or self.predicate else ""
            raise IndexError(f"index {i} is out of range for {self.label}{view} with {n} "
                             f"row{'' if n == 1 else 's'}")
        i %= n
        if self.units is None and self.predicate is None:
            s = bisect.bisect_right(self._row_offsets, i) - 1
            within = i - self._row_offsets[s]
            rg = bisect.bisect_right(self._rg_starts[s], within) - 1
            return s, rg, within - self._rg_starts[s][rg], None
        cum = np.cumsum(self._counts())
        j = int(np.searchsorted(cum, i, side="right"))
        s, rg = self._units()[j]
        return s, rg, i - (int(cum[j - 1]) if j else 0), None

    # --- keys -------------------------------------------------------------------------------

    def _locate_keys(self, keys: Sequence[str]) -> list[_Target | None]:
        m = self.manifest
        parts = m.key_index_parts
        if m.keys_sorted or not parts:
            mins = [e.key_min for e in m.shards]
            rg_mins: dict[int, list[str]] = {}
            return [self._sorted_target(k, mins, rg_mins) for k in keys]
        out: list[_Target | None] = [None] * len(keys)
        for info in parts:
            todo = [p for p, t in enumerate(out) if t is None]
            if not todo:
                break
            found = self._indexed_targets(info, [keys[p] for p in todo])
            for p, t in zip(todo, found, strict=True):
                out[p] = t
        return out

    def _sorted_target(self, key: str, mins: list[str],
                       rg_mins: dict[int, list[str]]) -> _Target | None:
        """Where ``key`` would be (shard ``mins`` and the row groups' ``rg_mins``, filled as
        shards are met, made once per lookup, not per key)."""
        shards = self.manifest.shards
        s = bisect.bisect_right(mins, key) - 1
        if s < 0 or key > shards[s].key_max:
            return None
        if s not in rg_mins:
            rg_mins[s] = self.manifest.table.column("rg_key_min")[s].as_py()
        rg = bisect.bisect_right(rg_mins[s], key) - 1
        return (s, rg, None, key) if rg >= 0 else None

    def _indexed_targets(self, info: dict[str, Any], keys: Sequence[str]) -> list[_Target | None]:
        """The targets of ``keys`` found in key index part ``info`` (None: not in it)."""
        ref = ShardRef.of_index(info)
        mins, maxs = info["rg_key_min"], info["rg_key_max"]
        out: list[_Target | None] = [None] * len(keys)
        groups: dict[int, list[int]] = {}
        for pos, k in enumerate(keys):
            j = bisect.bisect_right(mins, k) - 1
            if j >= 0 and k <= maxs[j]:
                groups.setdefault(j, []).append(pos)
        for j, positions in groups.items():
            t = self.reader.read(ref, j, dataset=self.manifest.name,
                                 version=self.manifest.version)
            wanted = string_array([keys[p] for p in positions])
            found = pc.index_in(wanted, value_set=t.column(KEY_COLUMN)).to_pylist()
            rows = t.column("row").to_pylist()
            for p, f in zip(positions, found, strict=False):
                if f is not None:
                    g = int(rows[f])
                    s = bisect.bisect_right(self._row_offsets, g) - 1
                    within = g - self._row_offsets[s]
                    rg = bisect.bisect_right(self._rg_starts[s], within) - 1
                    out[p] = (s, rg, within - self._rg_starts[s][rg], keys[p])
        return out

    # --- reading ----------------------------------------------------------------------------

    def take(self, items: Sequence[int | str] | np.ndarray,
             columns: Sequence[str] | None = None, warn: bool = False) -> pa.Table:
        """Rows by position (ints, negative allowed) or by key (strs), in the order given
        (``warn``: a user's take(), told once that ints are positions where keys are
        numbers)."""
        if isinstance(items, (str, bytes, int)):
            one = f"ds[{items!r}]" if isinstance(items, int) else f"get({items!r})"
            raise TypeError(f"take() wants a list of keys or positions, got {items!r}: use "
                            f"take([{items!r}]) or {one} for one sample"
                            + (f", head({items!r}) for the first {items!r} rows"
                               if isinstance(items, int) and items > 0 else ""))
        if isinstance(items, Mapping) or not isinstance(items, Iterable):
            raise TypeError(f"take(items={shown(items)}): items must be a list of positions "
                            f"(ints) or keys (strs), got {kind(items)}")
        items = list(items)
        schema = projection(self.manifest.schema, columns)
        keys = [x for x in items if isinstance(x, str)]
        located = iter(self._locate_keys(keys)) if keys else iter(())
        targets: list[_Target] = []
        for x in items:
            if isinstance(x, str):
                t = next(located)
                if t is None:
                    raise MissingKeyError(self._missing(x))
                targets.append(t)
            elif isinstance(x, (int, np.integer)) and not isinstance(x, bool):
                targets.append(self._position(int(x)))
            else:
                raise TypeError(f"take() wants ints (positions) or strs (keys), got {x!r}")
        if warn and items and not keys and not self._told:
            self._told = True
            warn_positions(self.manifest)
        return self._read(targets, schema)

    def _missing(self, key: str) -> str:
        view = " in this filtered view" if self.units is not None or self.predicate else ""
        twin = "" if getattr(self._probing, "on", False) else unicode_twin(self, key)
        return f"no sample with key {cut(key)!r}{view} of {self.label}{twin}"

    def _read(self, targets: list[_Target], schema: pa.Schema) -> pa.Table:
        view_units = None if self.units is None else set(self.units)
        names = None if self.predicate is not None else schema.names
        groups: dict[tuple[int, int], list[int]] = {}
        for pos, (s, rg, _i, key) in enumerate(targets):
            if key is not None and view_units is not None and (s, rg) not in view_units:
                raise MissingKeyError(self._missing(key))
            groups.setdefault((s, rg), []).append(pos)
        pieces: list[pa.Table] = []
        order: list[int] = []
        for (s, rg), positions in groups.items():
            table = self.reader.read(ShardRef.of(self.manifest.shards[s]), rg, names,
                                     dataset=self.manifest.name,
                                     version=self.manifest.version)
            if self.predicate is not None:
                keep = self._filtered_offsets(table, positions, targets)
                table = filter_rows(table, self.predicate)
            else:
                keep = self._offsets(table, positions, targets)
            pieces.append(table.select(schema.names).take(int64_array(keep)))
            order.extend(positions)
        if not pieces:
            return pa.Table.from_batches([], schema=schema)  # empty_table() imports pandas
        combined = pa.concat_tables(pieces).combine_chunks()
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
        return combined.take(int64_array(inverse)).cast(schema)

    def _offsets(self, table: pa.Table, positions: list[int], targets: list[_Target]) -> list[int]:
        """The rows of ``table`` (one row group) the ``targets`` at ``positions`` name: by
        offset, or by key, all keys of the row group looked up at once (one pass over its
        key column, not one per key: 32,000 keys took 4 s that way)."""
        out = [targets[p][2] for p in positions]
        todo = [n for n, i in enumerate(out) if i is None]
        if todo:
            keycol = table.column(KEY_COLUMN)
            wanted = string_array([str(targets[positions[n]][3]) for n in todo])
            found = pc.index_in(wanted.cast(keycol.type), value_set=keycol).to_pylist()
            for n, f in zip(todo, found, strict=True):
                if f is None:
                    raise MissingKeyError(self._missing(str(targets[positions[n]][3])))
                out[n] = f
        return [int(i) for i in out if i is not None]

    def _filtered_offsets(self, table: pa.Table, positions: list[int],
                          targets: list[_Target]) -> list[int]:
        # Key targets address the unfiltered row group; positions address the filtered one.
        assert self.predicate is not None
        match_keys = filter_rows(table, self.predicate).column(KEY_COLUMN).to_pylist()
        index_of = {k: n for n, k in enumerate(match_keys)}
        out = []
        for p in positions:
            _s, _rg, i, key = targets[p]
            if key is None:
                out.append(int(i or 0))
                continue
            if key not in index_of:
                raise MissingKeyError(self._missing(key))
            out.append(index_of[key])
        return out

    def get(self, key: str, columns: Sequence[str] | None = None) -> pa.Table:
        """The one-row table of sample ``key`` (NotFoundError naming the key if absent)."""
        if not isinstance(key, str):
            raise TypeError(f"keys are strings, got {key!r}")
        return self.take([key], columns)

    def row(self, i: int, columns: Sequence[str] | None = None) -> pa.Table:
        return self.take([i], columns)
